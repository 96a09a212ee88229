/** hookwatch started through npm as the README shows it, for tests of what npm changes about a run. */
import { spawn } from 'node:child_process';
import { basename, delimiter } from 'node:path';
import { fileURLToPath } from 'node:url';
import { outputOf, type ProcessOutput } from './hookwatch-process.ts';

/** The package folder, where `npm --prefix` runs the hookwatch script. */
export const PACKAGE_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/**
 * The PATH of the shell the tests were started from, without node_modules/.bin folders and npm's node-gyp-bin:
 * under `npm test` those are npm's, and a shell's PATH normally holds neither. npm and the system Node stay.
 */
export function shellPath(): string {
  return (process.env['PATH'] ?? '').split(delimiter).filter((entry) => !entry.endsWith('/node_modules/.bin') && basename(entry) !== 'node-gyp-bin').join(delimiter);
}

/** How a user starts hookwatch through npm, as the README shows. */
export type NpmStart = 'npm run' | 'npx';

/**
 * Runs hookwatch with `args` through npm with exactly `env`: `npm --prefix <package> run --silent hookwatch --
 * <args>` from `cwd`, or `npx hookwatch <args>` in the package folder (where npx finds the bin). Its exit code,
 * stdout and stderr (npm's warnings, such as EBADENGINE under an older system Node, included).
 */
export function hookwatchThroughNpm(start: NpmStart, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv; input?: string }): Promise<ProcessOutput> {
  const [command, argv, cwd] = start === 'npx' ? ['npx', ['hookwatch', ...args], PACKAGE_ROOT] : ['npm', ['--prefix', PACKAGE_ROOT, 'run', '--silent', 'hookwatch', '--', ...args], options.cwd];
  const child = spawn(command, argv, { cwd, env: options.env });
  const output = outputOf(child);
  child.stdin.end(options.input ?? '');
  return output;
}
