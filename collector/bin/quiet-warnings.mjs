// Earlier Node 24 releases warn on stderr, on every run, that type stripping is experimental as the first .ts
// module loads (24.0 to 24.2), and that SQLite is as node:sqlite loads. Under `guard` that stderr is the hook's,
// which Claude Code gives the model as the reason of a block (exit 2): it must stay the command's own; `serve`
// writes its log there as JSON lines, which a stray line of text breaks. Other warnings are still shown.
// Loaded by hookwatch.mjs before any .ts module, and by every worker thread before its own (a worker has a process
// object of its own, and warns again): see collector/src/worker-thread.ts.
const QUIET_WARNINGS = ['Type Stripping is an experimental feature', 'SQLite is an experimental feature'];
const emitWarning = process.emitWarning;
process.emitWarning = function (warning, ...rest) {
  const message = typeof warning === 'string' ? warning : warning?.message;
  if (typeof message === 'string' && QUIET_WARNINGS.some((w) => message.startsWith(w))) return;
  return emitWarning.call(this, warning, ...rest);
};
