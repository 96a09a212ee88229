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
import { parseArgs } from 'node:util';
import { markdownTable, type BenchModule, type BenchResult } from './lib/result.ts';
import { startedAsScript } from '../collector/src/tools/common/entry.ts';

/** Benchmark modules, in run order (relative to this file). */
export const MODULES = ['ingest.ts', 'load.ts', 'alerts.ts', 'replicas.ts', 'alert-eval.ts', 'dashboard.ts', 'store.ts', 'forward.ts', 'guard.ts', 'cardinality.ts'] as const;

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

const USAGE = `Usage: npm run bench [-- [--quick] [--only MODULE,...] [--out NAME]]

Runs every benchmark module (or those --only names) and writes bench/results/NAME.json and NAME.md
(NAME defaults to latest, the full run the docs cite).
  --quick      smoke-test sizes (seconds per module)
  --only       the modules to run, separated by commas, .ts optional: ${MODULES.join(', ')}
  --out NAME   the report's name under bench/results/
  --help       this help
`;

/** The command that writes the same report again, as the report names it. */
export function commandOf(quick: boolean, only: readonly string[] | undefined, out: string): string {
  const args = [quick ? '--quick' : '', only ? `--only ${only.join(',')}` : '', out !== 'latest' ? `--out ${out}` : ''].filter(Boolean);
  return args.length > 0 ? `npm run bench -- ${args.join(' ')}` : 'npm run bench';
}

/** Runs the modules and returns the report, naming `command` (commandOf) as the one that ran. */
async function runAll(quick: boolean, modules: readonly string[], log: (line: string) => void, onProgress: (partial: BenchReport) => void, command: string): Promise<BenchReport> {
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
    return reportOf(quick, command, started, commit, outcomes);
  }
}

function reportOf(quick: boolean, command: string, started: number, commit: string, outcomes: ModuleOutcome[]): BenchReport {
  const cpuList = cpus();
  return {
    command,
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

/** The command line, or exit: 0 after --help, 2 with the usage for anything else it does not take. */
function args(): { quick: boolean; only: string[] | undefined; out: string } {
  let values;
  try {
    ({ values } = parseArgs({ options: { quick: { type: 'boolean' }, only: { type: 'string' }, out: { type: 'string' }, help: { type: 'boolean' } }, strict: true, allowPositionals: false }));
  } catch (err) {
    console.error(`bench: ${(err as Error).message}\n\n${USAGE}`);
    process.exit(2);
  }
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  return { quick: values.quick ?? false, only: values.only?.split(',').map((m) => (m.endsWith('.ts') ? m : `${m}.ts`)), out: values.out ?? 'latest' };
}

if (startedAsScript(import.meta.url)) {
  const { quick, only, out } = args();
  const unknown = only?.filter((m) => !(MODULES as readonly string[]).includes(m)) ?? [];
  if (unknown.length > 0) {
    console.error(`bench: unknown module(s) ${unknown.join(', ')}; known: ${MODULES.join(', ')}`);
    process.exit(2);
  }
  const dir = fileURLToPath(new URL('./results/', import.meta.url));
  mkdirSync(dir, { recursive: true });
  const write = (r: BenchReport): string => {
    writeFileSync(`${dir}${out}.json`, JSON.stringify(r, null, 2) + '\n');
    const md = renderMarkdown(r);
    writeFileSync(`${dir}${out}.md`, md);
    return md;
  };
  const report = await runAll(quick, only ?? MODULES, (line) => console.error(line), write, commandOf(quick, only, out));
  console.log(write(report));
  const failed = report.modules.filter((m) => m.status === 'failed');
  process.exit(failed.length > 0 ? 1 : 0);
}
