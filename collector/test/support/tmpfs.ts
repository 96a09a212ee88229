/**
 * A small file system of its own, for the tests of a full or read-only disk: a real tmpfs, so the writes really
 * fail with ENOSPC (tests run as root, where permissions would not stop them).
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireTool } from '../required-tool.ts';

/**
 * Mounts a tmpfs of `size` megabytes (MiB) on a fresh folder whose name starts with `prefix`; undefined when this
 * machine does not allow it (not root). CI runs as root, where a tmpfs mounts: there a failed mount throws, as a
 * broken check, not a reason to skip it.
 */
export function mountTmpfs(size: number, prefix: string): string | undefined {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}m`, 'tmpfs', dir], { stdio: 'ignore' });
    return dir;
  } catch {
    rmSync(dir, { recursive: true, force: true });
    requireTool(false, `mounting a ${size} MiB tmpfs (root)`, 'run the tests as root, as .ci/run does');
    return undefined;
  }
}

/** Unmounts a tmpfs of mountTmpfs and removes its folder. */
export function unmountTmpfs(dir: string): void {
  execFileSync('umount', [dir]);
  rmSync(dir, { recursive: true, force: true });
}

/** Fills the filesystem holding `dir` until it reports ENOSPC (64 KiB writes, then 512 B ones for the last few blocks); returns the filler's path. */
export function fillFilesystem(dir: string, name = 'filler'): string {
  const path = join(dir, name);
  const fd = openSync(path, 'w');
  try {
    for (const size of [64 * 1024, 512]) {
      const chunk = Buffer.alloc(size, 1);
      try {
        for (;;) writeSync(fd, chunk);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
      }
    }
  } finally {
    closeSync(fd);
  }
  return path;
}
