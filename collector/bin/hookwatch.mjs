#!/usr/bin/env node
// The hookwatch command. Node 24+ runs the TypeScript sources directly (type stripping); the version is
// checked here, before any .ts is imported, so an older Node says what to do instead of failing to load them.
import { nodeVersionProblem } from './node-version.mjs';
// Before any .ts module: Node's warnings that type stripping and SQLite are experimental stay off stderr.
import './quiet-warnings.mjs';

const problem = nodeVersionProblem();
if (problem) {
  console.error(problem);
  process.exit(1);
}
// Node caches the compiled (and type-stripped) sources on disk: a hook command that starts on every tool
// call then skips most of its startup. Failure to cache (read-only tmp) only costs speed.
const { enableCompileCache } = await import('node:module');
enableCompileCache?.();
// `npm run hookwatch -- <command>` runs in the package's folder; paths the user typed (`scan .`, `guard --install
// .claude/settings.json`, `--db ./x.db`) mean the folder npm was run from, which npm passes as INIT_CWD.
// The defaults (`./data/hookwatch.db`) stay the package's, where `npm start` made them.
if (process.env.npm_lifecycle_event === 'hookwatch' && process.env.INIT_CWD) {
  const { readDefaultPathsFrom } = await import('../src/config/default-paths.ts');
  readDefaultPathsFrom(process.cwd());
  process.chdir(process.env.INIT_CWD);
}
// Started by npm (`npm run hookwatch`, `npx hookwatch`), hookwatch has the package's node_modules/.bin first on
// PATH and npm's variables. What it runs (the hooks `check` runs, the command `guard` wraps) gets the environment
// of the shell npm was started from instead, as Claude Code would give it. INIT_CWD goes too: a hook that `check`
// runs in its project and that calls this bin again (a guarded one) must stay in the folder it is started in.
if (process.env.npm_lifecycle_event) {
  const { leaveNpmEnvironment, startedByNpm } = await import('../src/tools/common/npm-env.ts');
  if (startedByNpm(process.env)) leaveNpmEnvironment(process.env);
}
// A reader that goes away (`scan | head`) is not an error of the command: what it would have read is dropped.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err) => {
    if (err.code !== 'EPIPE') throw err;
  });
}
// `guard` runs as a hook command on every tool call: go straight to it without loading the service.
if (process.argv[2] === 'guard') {
  const { guardMain } = await import('../src/tools/guard/main.ts');
  await guardMain(process.argv.slice(3));
}
const { main } = await import('../src/main.ts');
const { flushOutput } = await import('../src/tools/common/io.ts');
const code = await main(process.argv.slice(2));
// process.exit would drop what a pipe has not taken yet.
await flushOutput();
process.exit(code);
