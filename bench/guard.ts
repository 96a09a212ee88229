/**
 * Guard benchmark (`node bench/guard.ts [--quick]`): the latency `hookwatch guard` adds to a hook command, the
 * way Claude Code pays it on every tool call. Each round runs the bare command, then the same command through
 * the guard (the bin that `guard --install` writes into settings.json, and `node collector/src/main.ts guard`),
 * interleaved so load on the machine hits both alike; p50 and p99 of the guarded runs are reported next to the
 * bare command's in the same run, and next to `node -e 0` (what any Node-based wrapper pays). A third pair trims
 * a 15,000-character output, the case the guard exists for. The bin enables Node's compile cache, so after the
 * warm-up run the TypeScript sources are not stripped again; `main.ts` as the entry pays for the stripper.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { percentile, result, runStandalone, type BenchOptions, type BenchResult } from './lib/result.ts';
import { startedAsScript } from '../collector/src/tools/common/entry.ts';

const BIN = fileURLToPath(new URL('../collector/bin/hookwatch.mjs', import.meta.url));
const MAIN = fileURLToPath(new URL('../collector/src/main.ts', import.meta.url));
const INPUT = JSON.stringify({ session_id: 'bench', hook_event_name: 'PreToolUse', tool_name: 'Bash', tool_input: { command: 'ls' } });

/** Wall time of one run in ms, from spawn to exit with stdout drained; throws when the run fails. */
function timeRun(file: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(file, args, { env, stdio: ['pipe', 'pipe', 'inherit'] });
    child.stdout.resume();
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(`${file} ${args.join(' ')} exited ${code}`))));
    // Commands that do not read their input close the pipe early, as real hooks may.
    child.stdin.on('error', () => undefined);
    child.stdin.end(INPUT);
  });
}

/** Seconds as `times` prints them: `0m1.230000s`. */
function timesSeconds(text: string): number {
  const m = /^(\d+)m([\d.]+)s$/.exec(text.trim());
  return m ? Number(m[1]) * 60 + Number(m[2]) : Number.NaN;
}

/**
 * CPU time (user + system) per run of `command`, over `runs` runs in one shell: the shell's `times` builtin
 * reports what its finished children used. Unlike wall time this barely moves with the load of other work.
 */
function cpuMsPerRun(command: readonly string[], runs: number, env: NodeJS.ProcessEnv): number {
  const quoted = command.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const out = execFileSync('/bin/sh', ['-c', `i=0; while [ $i -lt ${runs} ]; do printf '{}' | ${quoted} >/dev/null; i=$((i+1)); done; times`], { env, encoding: 'utf8' });
  const [user, system] = (out.trim().split('\n')[1] ?? '').split(/\s+/);
  return ((timesSeconds(user ?? '') + timesSeconds(system ?? '')) * 1000) / runs;
}

export async function run(opts: BenchOptions): Promise<BenchResult[]> {
  const rounds = opts.quick ? 15 : 200;
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-bench-guard-'));
  const env = { ...process.env, HOOKWATCH_GUARD_DIR: dir };
  const small = ['/bin/echo', 'hook output'];
  const large = ['/bin/sh', '-c', `head -c 15000 /dev/zero | tr '\\0' x`];
  const samples: Record<'bare' | 'node' | 'bin' | 'main' | 'bareLarge' | 'binLarge', number[]> = { bare: [], node: [], bin: [], main: [], bareLarge: [], binLarge: [] };
  try {
    // Warm the file cache so the first guarded run does not pay for reading the sources from disk.
    await timeRun(process.execPath, [BIN, 'guard', '--', ...small], env);
    for (let i = 0; i < rounds; i++) {
      samples.bare.push(await timeRun(small[0] as string, small.slice(1), env));
      samples.node.push(await timeRun(process.execPath, ['-e', '0'], env));
      samples.bin.push(await timeRun(process.execPath, [BIN, 'guard', '--', ...small], env));
      samples.main.push(await timeRun(process.execPath, [MAIN, 'guard', '--', ...small], env));
      samples.bareLarge.push(await timeRun(large[0] as string, large.slice(1), env));
      samples.binLarge.push(await timeRun(process.execPath, [BIN, 'guard', '--', ...large], env));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const cpuRuns = opts.quick ? 20 : 100;
  const cpu = {
    node: cpuMsPerRun([process.execPath, '-e', '0'], cpuRuns, env),
    bin: cpuMsPerRun([process.execPath, BIN, 'guard', '--', ...small], cpuRuns, env),
    main: cpuMsPerRun([process.execPath, MAIN, 'guard', '--', ...small], cpuRuns, env),
  };
  const notes = `${rounds} interleaved rounds; wall time spawn to exit; Node ${process.versions.node}`;
  const figures: BenchResult[] = [];
  for (const p of [50, 99]) {
    figures.push(
      result(`guard (bin) over echo: p${p}`, percentile(samples.bin, p), 'ms', 'bare command', percentile(samples.bare, p), `${notes}; added ${(percentile(samples.bin, p) - percentile(samples.bare, p)).toFixed(1)} ms`),
      result(`guard (bin) over Node's own start: p${p}`, percentile(samples.bin, p), 'ms', 'node -e 0', percentile(samples.node, p), `${notes}; the part of the added time that is the guard's, not Node's`),
      result(`guard (main.ts) over echo: p${p}`, percentile(samples.main, p), 'ms', 'bare command', percentile(samples.bare, p), `${notes}; added ${(percentile(samples.main, p) - percentile(samples.bare, p)).toFixed(1)} ms`),
      result(`guard trimming 15,000 chars: p${p}`, percentile(samples.binLarge, p), 'ms', 'bare command', percentile(samples.bareLarge, p), `${notes}; output trimmed to 9,500 and saved to a file; added ${(percentile(samples.binLarge, p) - percentile(samples.bareLarge, p)).toFixed(1)} ms`),
    );
  }
  const cpuNotes = `user + system CPU of the whole run (guard and command), mean over ${cpuRuns} runs, from the shell's times`;
  figures.push(
    result('guard (bin) CPU per run', cpu.bin, 'ms', 'node -e 0', cpu.node, `${cpuNotes}; the guard's own share: ${(cpu.bin - cpu.node).toFixed(1)} ms`),
    result('guard (main.ts) CPU per run', cpu.main, 'ms', 'node -e 0', cpu.node, `${cpuNotes}; main.ts as the entry is type-stripped before the compile cache is on`),
  );
  return figures;
}

const USAGE = `Usage: node bench/guard.ts [--quick]

The latency hookwatch guard adds to a hook command, beside the bare command in the same run.
  --quick               smoke-test sizes (seconds, not minutes)
  --help                this help
`;

if (startedAsScript(import.meta.url)) runStandalone(run, USAGE);
