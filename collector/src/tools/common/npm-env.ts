/**
 * The environment of the shell npm was started from. `npm run hookwatch -- check` and `npx hookwatch` start
 * hookwatch with PATH and variables npm adds; a hook that check runs, or the command a guard wraps, would then
 * find tools (the package's Node 24, vitest, tsc...) that Claude Code does not give it.
 */
import { basename, delimiter, dirname, sep } from 'node:path';

const BIN = `${sep}node_modules${sep}.bin`;

/**
 * True when npm started hookwatch itself: `npm run hookwatch` (the package's script) or `npm exec hookwatch` /
 * `npx hookwatch` (npm names what it runs, quoted). Not when hookwatch runs under something else npm started (a
 * test run under `npm test` or `npx vitest`), which has npm's environment for reasons of its own.
 */
export function startedByNpm(env: NodeJS.ProcessEnv): boolean {
  if (env['npm_lifecycle_event'] === 'hookwatch') return true;
  return env['npm_command'] === 'exec' && /^'?hookwatch(?:'|\s|$)/.test(env['npm_lifecycle_script'] ?? '');
}

/** The folder whose node_modules/.bin `entry` is, or undefined when it is none. */
function binOwner(entry: string | undefined): string | undefined {
  if (entry === BIN) return sep;
  return entry?.endsWith(BIN) ? entry.slice(0, -BIN.length) : undefined;
}

/** True when `upper` is node_modules/.bin of the folder just above the one `lower` is node_modules/.bin of. */
function isParentBin(lower: string | undefined, upper: string | undefined): boolean {
  const [below, above] = [binOwner(lower), binOwner(upper)];
  return below !== undefined && above !== undefined && below !== above && dirname(below) === above;
}

/**
 * The PATH entries after those npm put first, or undefined when `entries` does not start with them. npm (7 and
 * later) runs a script or `npm exec` with PATH made of: the bin folders of `npm exec` (node_modules/.bin folders,
 * or the global one), node_modules/.bin of the folder it runs in and of every folder above it up to the root,
 * its node-gyp-bin folder, then the PATH it was given, unchanged. An entry the user put before npm's is never
 * taken for one of them: what precedes the chain of folders must be a bin folder npm adds.
 */
function afterNpmEntries(entries: readonly string[], globalBin: string | undefined): readonly string[] | undefined {
  const gyp = entries.findIndex((entry, i) => basename(entry) === 'node-gyp-bin' && entries[i - 1] === BIN);
  if (gyp < 0) return undefined;
  let first = gyp - 1;
  while (first > 0 && isParentBin(entries[first - 1], entries[first])) first--;
  const added = entries.slice(0, first);
  return added.every((entry) => binOwner(entry) !== undefined || entry === globalBin) ? entries.slice(gyp + 1) : undefined;
}

/** `entries` without what every npm that started this process put first (an npm script may run npm again). */
function beforeNpm(entries: readonly string[], globalBin: string | undefined): readonly string[] {
  const after = afterNpmEntries(entries, globalBin);
  return after === undefined ? entries : beforeNpm(after, globalBin);
}

/**
 * Takes out of `env` what npm added when it started this process: the PATH entries it put first (and those of an
 * npm that started that npm), the npm_* variables, INIT_CWD, and NODE when it names npm's Node. The user's own
 * PATH entries, first ones included, stay as the shell had them. Changes `env` in place.
 */
export function leaveNpmEnvironment(env: NodeJS.ProcessEnv): void {
  const globalPrefix = env['npm_config_global_prefix'];
  const globalBin = globalPrefix ? `${globalPrefix}${sep}bin` : undefined;
  const path = env['PATH'];
  if (path !== undefined) env['PATH'] = beforeNpm(path.split(delimiter), globalBin).join(delimiter);
  if (env['NODE'] !== undefined && env['NODE'] === env['npm_node_execpath']) delete env['NODE'];
  delete env['INIT_CWD'];
  for (const name of Object.keys(env)) if (name.startsWith('npm_')) delete env[name];
}
