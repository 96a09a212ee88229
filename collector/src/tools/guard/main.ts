/**
 * The guard's own entry point. A hook command runs on every tool call, so this path loads only the guard:
 * no config schema, store, server or exporter code (the bench checks the added latency).
 */
import { runGuard } from './index.ts';
import type { GuardExit, GuardIO } from './index.ts';
import { startedAsScript } from '../common/entry.ts';
import { exitBySignal } from '../common/io.ts';

/** The real process as the guard sees it. */
export function processGuardIO(): GuardIO {
  // A write that fails (the reader is gone) is told by its callback: the stream's 'error' event must not end the
  // guard as well, before it has passed on the command's exit.
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
  return {
    stdin: process.stdin,
    stdout: (data) => new Promise((resolve, reject) => {
      process.stdout.write(data, (error) => (error ? reject(error) : resolve()));
    }),
    stderr: (s) => process.stderr.write(s),
    env: process.env,
    cwd: process.cwd(),
  };
}

/** Ends this process the way the command ended: same exit code, or killed by the same signal. */
export function exitLike(exit: GuardExit): never {
  if ('signal' in exit) exitBySignal(exit.signal);
  process.exit(exit.code);
}

/** Runs `hookwatch guard <argv>` in this process and exits with the command's status. */
export async function guardMain(argv: readonly string[]): Promise<never> {
  return exitLike(await runGuard(argv, processGuardIO()));
}

// Not import.meta.main: Node 24.0 and 24.1 lack it, and `node guard/main.ts` would run nothing there.
if (startedAsScript(import.meta.url)) {
  await guardMain(process.argv.slice(2));
}
