/** Whether a module is the script node was started with, on every Node the engines range takes. */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * Whether node was started with the module at `moduleUrl` (its import.meta.url): `node main.ts serve`, not an
 * import of it. import.meta.main says so only from Node 24.2, and the engines range takes 24.0, where an entry
 * point checking it would run nothing and exit 0. Node runs the real path of a script started through a symbolic
 * link, so argv[1] is compared by its real path.
 */
export function startedAsScript(moduleUrl: string): boolean {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(moduleUrl);
  } catch {
    return false;
  }
}
