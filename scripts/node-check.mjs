// npm scripts run the project's own Node (the `node` devDependency puts it first on PATH).
// Fail early and clearly if an older system Node is used instead.
const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  console.error(`hookwatch needs Node 24 or newer (found ${process.versions.node}). Run it through npm scripts (npm start, npm test) so the pinned Node is used.`);
  process.exit(1);
}
