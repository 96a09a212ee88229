/**
 * `npm run bench [-- --quick] [--only ingest.ts,load.ts] [--out NAME]`: runs every benchmark module (or the
 * listed ones) in a fixed order and writes bench/results/NAME.json and NAME.md (NAME defaults to `latest`),
 * each figure next to its same-run baseline and the ratio. The report is rewritten after every module, so a
 * long run that is stopped keeps what it measured. A module that is not present yet is skipped with a note,
 * so new benchmarks plug in by adding a file that exports `run({ quick }): Promise<BenchResult[]>`
 * (see lib/result.ts).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { markdownTable, type BenchModule, type BenchResult } from './lib/result.ts';

/** Benchmark modules, in run order (relative to this file). */
export const MODULES = ['ingest.ts', 'load.ts', 'alerts.ts', 'dashboard.ts', 'store.ts', 'forward.ts', 'guard.ts', 'cardinality.ts'] as const;

/** One module's outcome in the report. */
export interface ModuleOutcome {
  module: string;
  status: 'ok' | 'skipped' | 'failed';
  seconds: number;
  note: string;
  results: BenchResult[];
}

/** The whole report as written to latest.json. */
export interface BenchReport {
  command: string;
  quick: boolean;
  startedAt: string;
  seconds: number;
  machine: { cpus: number; cpuModel: string; memoryGiB: number; node: string; platform: string; commit: string };
  modules: ModuleOutcome[];
}

/**
 * The commit measured, read once when the run starts (a commit made during a long run must not be credited
 * with figures measured before it), marked "+changes" when tracked source files differed from it.
 */
function gitCommit(): string {
  const git = (...args: string[]): string => execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  try {
    const head = git('rev-parse', '--short', 'HEAD');
    const changed = git('status', '--porcelain', '--untracked-files=no', '--', '.', ':(exclude)bench/results');
    return changed ? `${head}+changes` : head;
  } catch {
    return 'unknown';
  }
}

/** Runs the modules (all by default) and returns the report. */
export async function runAll(quick: boolean, modules: readonly string[] = MODULES, log: (line: string) => void = () => {}, onProgress: (partial: BenchReport) => void = () => {}): Promise<BenchReport> {
  const started = Date.now();
  const commit = gitCommit();
  const outcomes: ModuleOutcome[] = [];
  for (const name of modules) {
    const url = new URL(`./${name}`, import.meta.url);
    const t0 = performance.now();
    if (!existsSync(fileURLToPath(url))) {
      outcomes.push({ module: name, status: 'skipped', seconds: 0, note: `bench/${name} is not present yet`, results: [] });
      log(`bench: ${name} skipped (not present)`);
      continue;
    }
    log(`bench: ${name} running${quick ? ' (quick)' : ''}...`);
    try {
      const mod = (await import(url.href)) as Partial<BenchModule>;
      if (typeof mod.run !== 'function') throw new Error(`bench/${name} does not export run({ quick })`);
      const results = await mod.run({ quick });
      const seconds = (performance.now() - t0) / 1000;
      outcomes.push({ module: name, status: 'ok', seconds, note: '', results });
      log(`bench: ${name} done in ${seconds.toFixed(1)} s (${results.length} figures)`);
    } catch (err) {
      const seconds = (performance.now() - t0) / 1000;
      outcomes.push({ module: name, status: 'failed', seconds, note: (err as Error).message ?? String(err), results: [] });
      log(`bench: ${name} FAILED: ${(err as Error).message}`);
    }
    onProgress(report());
  }
  return report();

  function report(): BenchReport {
    return reportOf(quick, modules, started, commit, outcomes);
  }
}

function reportOf(quick: boolean, modules: readonly string[], started: number, commit: string, outcomes: ModuleOutcome[]): BenchReport {
  const cpuList = cpus();
  const only = modules.length === MODULES.length ? '' : ` --only ${modules.join(',')}`;
  return {
    command: `npm run bench${quick || only ? ' --' : ''}${quick ? ' --quick' : ''}${only}`,
    quick,
    startedAt: new Date(started).toISOString(),
    seconds: (Date.now() - started) / 1000,
    machine: {
      cpus: cpuList.length,
      cpuModel: cpuList[0]?.model ?? 'unknown',
      memoryGiB: Math.round(totalmem() / 2 ** 30),
      node: process.version,
      platform: `${process.platform}-${process.arch}`,
      commit,
    },
    modules: [...outcomes],
  };
}

/** The markdown report: machine, one table of every figure, then skipped or failed modules. */
export function renderMarkdown(r: BenchReport): string {
  const all = r.modules.flatMap((m) => m.results);
  const lines = [
    `# hookwatch benchmarks${r.quick ? ' (quick)' : ''}`,
    '',
    `Command: \`${r.command}\` · started ${r.startedAt} · ${r.seconds.toFixed(0)} s · commit ${r.machine.commit}`,
    `Machine: ${r.machine.cpus} × ${r.machine.cpuModel}, ${r.machine.memoryGiB} GiB, Node ${r.machine.node}, ${r.machine.platform}`,
    '',
    `Modules: ${r.modules.map((m) => `${m.module} ${m.status === 'ok' ? `${m.seconds.toFixed(0)} s` : m.status}`).join(' · ')}`,
    '',
    'Ratio = value / baseline, both measured in this run. Speed is reported, never asserted.',
    '',
    all.length > 0 ? markdownTable(all) : '_No figures._',
    '',
  ];
  const other = r.modules.filter((m) => m.status !== 'ok');
  if (other.length > 0) {
    lines.push('Modules not measured:', '');
    for (const m of other) lines.push(`- ${m.module}: ${m.status}: ${m.note}`);
    lines.push('');
  }
  return lines.join('\n');
}

/** The value after `--name`, if given. */
function flag(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i === -1 ? undefined : process.argv[i + 1];
}

if (import.meta.main) {
  const quick = process.argv.includes('--quick');
  const only = flag('--only')?.split(',').map((m) => (m.endsWith('.ts') ? m : `${m}.ts`));
  const unknown = only?.filter((m) => !(MODULES as readonly string[]).includes(m)) ?? [];
  if (unknown.length > 0) {
    console.error(`bench: unknown module(s) ${unknown.join(', ')}; known: ${MODULES.join(', ')}`);
    process.exit(2);
  }
  const out = flag('--out') ?? 'latest';
  const dir = fileURLToPath(new URL('./results/', import.meta.url));
  mkdirSync(dir, { recursive: true });
  const write = (r: BenchReport): string => {
    writeFileSync(`${dir}${out}.json`, JSON.stringify(r, null, 2) + '\n');
    const md = renderMarkdown(r);
    writeFileSync(`${dir}${out}.md`, md);
    return md;
  };
  const report = await runAll(quick, only ?? MODULES, (line) => console.error(line), write);
  console.log(write(report));
  const failed = report.modules.filter((m) => m.status === 'failed');
  process.exit(failed.length > 0 ? 1 : 0);
}
