/** Checks of the programs some tests run beside hookwatch, each failing under CI=true where it is missing (requireTool). */
import { spawnSync } from 'node:child_process';
import { requireTool } from '../required-tool.ts';

/** Whether `setpriv` can run a command as uid 1000 (util-linux; needs root). */
export function canRunAsUser(): boolean {
  return requireTool(spawnSync('setpriv', ['--reuid=1000', '--regid=1000', '--clear-groups', 'true']).status === 0, 'setpriv (util-linux)', 'install util-linux (apt-get install util-linux)');
}

/** Whether `strace -D` can trace a command here. */
export function canStrace(): boolean {
  return requireTool(spawnSync('strace', ['-D', '-qq', '-o', '/dev/null', 'true']).status === 0, 'strace, allowed to trace', 'install strace (apt-get install strace), as .ci/run does, and allow ptrace (in a container: --cap-add SYS_PTRACE)');
}

/** Whether the sqlite3 shell runs here (an operator's look at a live store). */
export function haveSqliteShell(): boolean {
  return requireTool(spawnSync('sqlite3', ['-version']).status === 0, 'the sqlite3 shell', 'install sqlite3 (apt-get install sqlite3), as .ci/run does');
}
