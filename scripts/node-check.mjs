// npm scripts run the project's own Node (the `node` devDependency puts it first on PATH).
// Fail early and clearly if an older system Node is used instead.
import { nodeVersionProblem } from '../collector/bin/node-version.mjs';

const problem = nodeVersionProblem();
if (problem) {
  console.error(problem);
  process.exit(1);
}
