/**
 * The hookwatch command. `guard` wraps a hook command and runs on every tool call, so it is dispatched before
 * anything else is loaded; so is `check`, which needs none of the service's configuration, store or server code
 * (some 35 MB of memory). Every other command (`serve`, the default, `config`, `scan`, `help`, and `check` after
 * flags of serve's) is in cli/main.ts.
 */
import { enableCompileCache } from 'node:module';
import { startedAsScript } from './tools/common/entry.ts';
import type { ToolIO } from './tools/common/io.ts';

/** Runs one command line; returns the exit status (`serve` runs until a signal). `io` lets tests run it in-process. */
export async function main(argv: readonly string[], io?: ToolIO): Promise<number> {
  if (argv[0] === 'guard') {
    const { guardMain } = await import('./tools/guard/main.ts');
    return guardMain(argv.slice(1));
  }
  // As cli/main.ts runs it when named first: check's own flags follow it, and it reports its own errors.
  if (argv[0] === 'check') {
    const [{ runCheck }, { processIO }] = await Promise.all([import('./tools/check/index.ts'), import('./tools/common/io.ts')]);
    return runCheck(argv.slice(1), io ?? processIO());
  }
  const { runCommand } = await import('./cli/main.ts');
  return runCommand(argv, io);
}

// Started as `node collector/src/main.ts` (the image's entry point), not imported (the bin imports it). Not
// import.meta.main: Node 24.0 and 24.1 lack it, and would run nothing and exit 0, a container's serve included.
if (startedAsScript(import.meta.url)) {
  // As in bin/hookwatch.mjs: later starts (a guarded hook runs on every tool call) reuse the compiled sources.
  enableCompileCache?.();
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`hookwatch: ${(err as Error).message}\n`);
      process.exit(1);
    },
  );
}
