#!/usr/bin/env node
// The hookwatch command. Node 24+ runs the TypeScript sources directly (type stripping); the version is
// checked here, before any .ts is imported, so an older Node says what to do instead of failing to load them.
import { nodeVersionProblem } from './node-version.mjs';

const problem = nodeVersionProblem();
if (problem) {
  console.error(problem);
  process.exit(1);
}
const { main } = await import('../src/main.ts');
process.exit(await main(process.argv.slice(2)));
