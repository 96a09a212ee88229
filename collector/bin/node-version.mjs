// Plain JavaScript that every Node.js can load, so an older Node gets a sentence instead of
// ERR_UNKNOWN_FILE_EXTENSION from the TypeScript sources (Node 24 runs them directly).
import { fileURLToPath } from 'node:url';

/** The oldest Node.js major hookwatch runs on (package.json "engines"). */
export const MIN_NODE_MAJOR = 24;

/** Why this Node.js cannot run hookwatch, with what to do instead (`root`: the package folder); undefined when it can. */
export function nodeVersionProblem(version = process.versions.node, execPath = process.execPath, root = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '')) {
  const folder = /^[\w@%+=:,./-]+$/.test(root) ? root : `'${root.replaceAll("'", "'\\''")}'`;
  const major = Number(String(version).split('.')[0]);
  if (major >= MIN_NODE_MAJOR) return undefined;
  return [
    `hookwatch needs Node.js ${MIN_NODE_MAJOR} or newer; this is Node.js ${version} (${execPath}).`,
    'The project brings its own Node.js 24 (the pinned "node" devDependency): after `npm ci`, run hookwatch',
    'through npm (`npm start`, `npm run hookwatch -- <command>`, `npx hookwatch <command>`), which puts it first',
    `on PATH; from another folder, \`npm --prefix ${folder} run hookwatch -- <command>\` (it reads paths from`,
    `the folder you are in); or install Node.js ${MIN_NODE_MAJOR}+ and run \`node collector/bin/hookwatch.mjs\`.`,
  ].join('\n');
}
