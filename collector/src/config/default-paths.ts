/**
 * Where the relative defaults of the path settings (`db`, `forward.queue.path`) are read from. `npm start` runs in
 * the hookwatch folder, so `./data/` is there; `npm run hookwatch -- <command>` moves to the folder npm was run
 * from (INIT_CWD) for the paths the user types, and keeps reading the defaults from the hookwatch folder, so
 * `backup`, `restore` and `config` name the same store `npm start` made. A leaf: the bin wrapper sets it.
 */
import { resolve } from 'node:path';

let base: string | undefined;

/** Reads the relative defaults from `dir` from now on instead of the current folder. */
export function readDefaultPathsFrom(dir: string): void {
  base = dir;
}

/** A path setting's default, absolute when the defaults are read from another folder than the current one. */
export function defaultPath(value: string): string {
  return base === undefined ? value : resolve(base, value);
}
