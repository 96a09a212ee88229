/**
 * Creating a folder and the folders missing above it without mkdirSync's `recursive`: under /proc, where a folder
 * cannot be made, that retries a lasting ENOENT for ever, blocking the event loop (a hook hangs; `serve --db
 * /proc/x/hookwatch.db` spins and no signal stops it). A leaf: the guard loads it on every hook run.
 */
import { mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/**
 * Creates `dir` and the folders missing above it, each with `mode` (before the umask); an existing folder keeps
 * its own. Each missing folder is made once, from the first existing one down, and any failure is thrown.
 */
export function makeDir(dir: string, mode = 0o777): void {
  const missing: string[] = [];
  for (let at = resolve(dir); ; at = dirname(at)) {
    try {
      if (statSync(at).isDirectory()) break;
      throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${dir}'`), { code: 'ENOTDIR', syscall: 'mkdir', path: dir });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || dirname(at) === at) throw error;
      missing.push(at);
    }
  }
  for (const folder of missing.reverse()) {
    try {
      mkdirSync(folder, { mode });
    } catch (error) {
      // Made meanwhile by another process: fine, as long as it is a folder.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || !statSync(folder).isDirectory()) throw error;
    }
  }
}
