/**
 * The one result shape every benchmark returns, so `npm run bench` can put each figure next to its same-run
 * baseline. A benchmark module exports `run({ quick }): Promise<BenchResult[]>`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

export interface BenchResult {
  /** What was measured, e.g. `ingest protobuf gzip: events/s`. */
  name: string;
  value: number;
  /** Unit of value and baselineValue, e.g. `events/s`, `µs/event`, `ms`, `MiB`. */
  unit: string;
  /** The same-run reference the figure is compared with, e.g. `protobufjs decode only`. */
  baselineName: string;
  baselineValue: number;
  /** value / baselineValue (NaN when the baseline is 0). */
  ratio: number;
  /** Sizes, durations, caveats: enough to reproduce and to read the figure right. */
  notes: string;
}

/** Options every benchmark module accepts. */
export interface BenchOptions {
  /** CI smoke run: small sizes, seconds not minutes; figures are reported, never asserted. */
  quick: boolean;
}

/** The contract of a benchmark module the runner imports. */
export interface BenchModule {
  run(opts: BenchOptions): Promise<BenchResult[]>;
}

/** Builds a result with the ratio filled in. */
export function result(name: string, value: number, unit: string, baselineName: string, baselineValue: number, notes = ''): BenchResult {
  return { name, value, unit, baselineName, baselineValue, ratio: baselineValue === 0 ? Number.NaN : value / baselineValue, notes };
}

/** Formats a figure with sensible precision for a table. */
export function fmt(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  const a = Math.abs(n);
  if (a >= 1000) return Math.round(n).toLocaleString('en-US');
  if (a >= 100) return n.toFixed(0);
  if (a >= 10) return n.toFixed(1);
  return n.toFixed(2);
}

/** A markdown table of results: figure, baseline, ratio, notes. */
export function markdownTable(results: readonly BenchResult[]): string {
  const rows = results.map((r) => `| ${r.name} | ${fmt(r.value)} ${r.unit} | ${r.baselineName}: ${fmt(r.baselineValue)} ${r.unit} | ${Number.isFinite(r.ratio) ? r.ratio.toFixed(2) + '×' : 'n/a'} | ${r.notes.replace(/\|/g, '\\|')} |`);
  return ['| benchmark | value | same-run baseline | ratio | notes |', '|---|---|---|---|---|', ...rows].join('\n');
}

/** Percentile (0..100) of unsorted samples by nearest rank; NaN when empty. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx] as number;
}

/** The options a module run on its own takes: strings and booleans, as node:util parseArgs reads them. */
type ModuleOptions = Record<string, { type: 'string' | 'boolean' }>;

/**
 * A benchmark module's command line when run on its own (`node bench/<module>.ts`), or exit: 0 after --help with
 * `usage` on stdout, 2 with it on stderr for an option the module does not take, so a typo never starts a long run.
 */
export function moduleArgs<O extends ModuleOptions>(usage: string, options: O): { [K in keyof O]?: O[K]['type'] extends 'string' ? string : boolean } {
  const argv = process.argv.slice(2);
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(usage);
    process.exit(0);
  }
  try {
    return parseArgs({ args: argv, options, strict: true, allowPositionals: false }).values as { [K in keyof O]?: O[K]['type'] extends 'string' ? string : boolean };
  } catch (err) {
    process.stderr.write(`bench: ${(err as Error).message}\n\n${usage}`);
    process.exit(2);
  }
}

/** `node bench/<module>.ts [--quick]`: runs one module and prints its table (exit 1 on failure). */
export function runStandalone(run: (opts: BenchOptions) => Promise<BenchResult[]>, usage: string): void {
  const { quick } = moduleArgs(usage, { quick: { type: 'boolean' } });
  run({ quick: quick === true }).then(
    (results) => console.log(markdownTable(results)),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}

/** The options of a module that times trials (alerts.ts, replicas.ts). */
export type TrialOptions = BenchOptions & { trials?: number; log?: (m: string) => void };

/**
 * `node bench/<module>.ts [--quick] [--trials N]` for a module that times trials: runs it with progress on stderr,
 * prints its table and writes bench/results/<name>.json.
 */
export async function runTrialsStandalone(run: (opts: TrialOptions) => Promise<BenchResult[]>, usage: string, name: string): Promise<void> {
  const values = moduleArgs(usage, { quick: { type: 'boolean' }, trials: { type: 'string' } });
  const trials = values.trials === undefined ? undefined : Number(values.trials);
  if (trials !== undefined && !(Number.isInteger(trials) && trials >= 1)) {
    process.stderr.write(`bench: --trials ${values.trials}: give a whole number of trials, at least 1\n\n${usage}`);
    process.exit(2);
  }
  const results = await run({
    quick: values.quick === true,
    ...(trials !== undefined ? { trials } : {}),
    log: (m) => console.error(`[${new Date().toISOString().slice(11, 23)}] ${m}`),
  });
  console.log(markdownTable(results));
  const dir = fileURLToPath(new URL('../results/', import.meta.url));
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${name}.json`), JSON.stringify(results, null, 2));
}
