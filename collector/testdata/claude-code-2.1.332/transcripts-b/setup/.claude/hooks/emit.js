// helper: node emit.js <mode> <n>   modes: ctx (JSON additionalContext), plain (stdout), sysmsg (JSON systemMessage), fail (exit 1), block (exit 2), sleep (sleep n s)
const [mode, nStr] = process.argv.slice(2); const n = Number(nStr || 0);
const ev = process.env.HOOK_EVENT || 'SessionStart';
if (mode === 'ctx') process.stdout.write(JSON.stringify({ hookSpecificOutput: { hookEventName: ev, additionalContext: 'C'.repeat(n) } }));
else if (mode === 'plain') process.stdout.write('P'.repeat(n));
else if (mode === 'sysmsg') process.stdout.write(JSON.stringify({ systemMessage: 'S'.repeat(n) }));
else if (mode === 'fail') { process.stderr.write('deliberate failure'); process.exit(1); }
else if (mode === 'block') { process.stderr.write('deliberate block'); process.exit(2); }
else if (mode === 'sleep') setTimeout(() => process.stdout.write('late'), n * 1000);
// emoji: n characters outside the BMP (2n UTF-16 code units) as plain stdout.
if (mode === 'emoji') process.stdout.write('\u{1F600}'.repeat(n));
