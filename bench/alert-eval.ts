/**
 * `npm run bench:alert-eval [-- --quick] [--hooks N] [--evaluations N] [--group-by DIMENSION]`: what one timer
 * evaluation of the alert rules costs with many hooks, and how long it holds the event loop (ingest and the API wait
 * behind it).
 *
 * Data: `hooks` hooks (default 5,000; 500 with --quick), each with a few executions over the last two weeks and one
 * in the last hour, written through the SQLite store's own ingest(); one hook in ten runs near the cap, one in
 * twenty over it, so the default rules (persisted, headroom, growth, blind, never_completed, hook_limit) raise
 * hundreds of alerts. With --group-by (a dimension: team, configured as an extra one, or a built-in such as
 * user.id), the default rules that take a groupBy (persisted, headroom, never_completed) are split by it, and each
 * execution carries one of three values of it (a hook's executions of the last day, two): what a rule evaluated
 * per hook and value reads. Alerting runs in this process on that store as `hookwatch serve` runs it (startAlerting,
 * SQLite state, a webhook receiver on loopback), with the timer off: the first evaluation (the one startAlerting
 * starts, which raises the alerts) apart from the next ones, started by hand (every alert already active, as at most
 * timer ticks). Per evaluation: its wall time, the CPU time of the event loop's thread meanwhile (the deliveries of
 * the evaluation before are awaited first; the first's own deliveries count), and the longest the event loop was
 * held meanwhile (perf_hooks monitorEventLoopDelay, 1 ms resolution): what a request arriving then waits at most.
 * Then a burst of deliveries noted, one per firing alert, as the dispatcher reports them: its wall and CPU time.
 * On a machine shared with other work a block includes time the process was not scheduled, and the wall time grows
 * with the load: the CPU time and the p50 over the evaluations are the steadier figures.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startAlerting } from '../collector/src/alerting/index.ts';
import { DEFAULT_RULE_KINDS, parseRules, takesGroupBy } from '../collector/src/alerting/settings.ts';
import { dimensionNames } from '../collector/src/pipeline/settings.ts';
import { BUILTIN_DIMENSIONS, type BuiltinDimension, type HookEvent } from '../collector/src/hooks/model.ts';
import { parseReceivers } from '../collector/src/notify/settings.ts';
import { SqliteStore } from '../collector/src/store/sqlite/index.ts';
import { silentLogger } from '../collector/src/telemetry/logger.ts';
import { startedAsScript } from '../collector/src/tools/common/entry.ts';
import { hookEvent, WebhookSink } from '../collector/test/support/alerting.ts';
import { historyHooks } from '../collector/test/support/history.ts';
import { markdownTable, percentile, result, type BenchOptions, type BenchResult, moduleArgs } from './lib/result.ts';

const DAY = 86_400_000;
/** The goal for the longest block of the event loop by one evaluation. */
const GOAL_BLOCK_MS = 50;

/**
 * Executions per hook: one a day over the last two weeks (the growth rule's trend) and one in the last hour; with
 * `groupBy`, each with a value of that dimension, by its day.
 */
async function fill(store: SqliteStore, hooks: number, now: number, groupBy?: string): Promise<void> {
  const all = historyHooks(hooks);
  const days = 13;
  for (let i = 0; i < all.length; i += 500) {
    const batch = all.slice(i, i + 500).flatMap((h, j) => [
      ...Array.from({ length: days }, (_, d) => ({ day: days - d, grow: d / days })),
      { day: 0, grow: 1 },
    ].map(({ day, grow }) => valued(groupBy, `${groupBy}-${(j + day) % 3}`, hookEvent({
      hookName: h.hookName, timeMs: now - day * DAY - (day === 0 ? 10 * 60_000 + j : 0),
      additionalContextChars: Math.round(h.size * (0.7 + 0.3 * grow)), outputsPersisted: h.size * (0.7 + 0.3 * grow) > 10_000 ? 1 : 0,
      // One hook in fifty from a client without sizes (the blind rule).
      ...(j % 50 === 11 ? { serviceVersion: '2.1.279', additionalContextChars: null, outputsPersisted: null } : {}),
    }))));
    await store.ingest(batch);
  }
}

/** The event with `value` for the dimension `dimension` (none: the event as it is). */
function valued(dimension: string | undefined, value: string, e: HookEvent): HookEvent {
  if (dimension === undefined) return e;
  if (isBuiltin(dimension)) return { ...e, [BUILTIN_DIMENSIONS[dimension]]: value };
  return { ...e, extra: { ...e.extra, [dimension]: value } };
}

const isBuiltin = (dimension: string): dimension is BuiltinDimension => Object.hasOwn(BUILTIN_DIMENSIONS, dimension);

interface Figure {
  ms: number;
  /** CPU time of this thread (the event loop's) meanwhile. */
  cpuMs: number;
  blockMs: number;
}

export async function run(opts: BenchOptions & { hooks?: number; evaluations?: number; groupBy?: string; log?: (m: string) => void }): Promise<BenchResult[]> {
  const hooks = opts.hooks ?? (opts.quick ? 500 : 5000);
  const evaluations = opts.evaluations ?? (opts.quick ? 3 : 10);
  const log = opts.log ?? (() => {});
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-bench-alert-eval-'));
  const db = join(dir, 'h.db');
  const { groupBy } = opts;
  // A dimension not built in is configured (`dimensions`), as a rule's groupBy needs.
  const dimensions = groupBy && !isBuiltin(groupBy) ? [groupBy] : [];
  const store = new SqliteStore({ path: db, synchronous: 'normal', dimensions });
  const sink = new WebhookSink();
  await sink.start();
  const figures: Figure[] = [];
  let alerts: number;
  let burst: { deliveries: number; ms: number; cpuMs: number };
  try {
    const now = Date.now();
    await fill(store, hooks, now, groupBy);
    log(`${hooks} hooks stored`);
    const config = {
      rules: groupBy ? parseRules(DEFAULT_RULE_KINDS.map((kind) => (takesGroupBy(kind) ? { kind, groupBy } : { kind })), dimensionNames(dimensions)) : parseRules(undefined),
      externalLabels: {},
      receivers: parseReceivers([{ name: 'bench', url: `${sink.url}/hook` }]), evaluationIntervalMs: 60_000, repeatIntervalMs: 4 * 3_600_000,
      externalUrl: '', otlp: { endpoint: '', headers: {} }, delivery: { deadlineMs: 60_000, initialBackoffMs: 5, maxBackoffMs: 20, maxQueue: 100_000 },
    };
    const alerting = await startAlerting({ config, db, store, logger: silentLogger, timer: false });
    /** Times `evaluation`, with the longest block of the event loop meanwhile. */
    const timed = async (i: number, evaluation: () => Promise<void>): Promise<void> => {
      const delay = monitorEventLoopDelay({ resolution: 1 });
      delay.enable();
      const t0 = performance.now();
      const cpu = process.threadCpuUsage();
      await evaluation();
      const used = process.threadCpuUsage(cpu);
      const ms = performance.now() - t0;
      delay.disable();
      figures.push({ ms, cpuMs: (used.user + used.system) / 1000, blockMs: delay.max / 1e6 });
      log(`evaluation ${i}: ${ms.toFixed(0)} ms (event loop CPU ${((used.user + used.system) / 1000).toFixed(0)} ms), event loop held up to ${(delay.max / 1e6).toFixed(0)} ms`);
    };
    try {
      // The evaluation of every rule startAlerting starts (it raises the alerts), and one of silences and repeats
      // queued behind it.
      await timed(0, () => alerting.engine.evaluate('notify'));
      for (let i = 1; i <= evaluations; i++) {
        // The deliveries of the evaluation before are not counted.
        await alerting.dispatcher.idle();
        await timed(i, () => alerting.engine.evaluate('all'));
      }
      alerts = alerting.engine.readModel.alerts().length;
      // A burst of deliveries, one for each firing alert (what the dispatcher reports as the first evaluation's
      // notifications are delivered): each looks its alert up by id and saves when it was notified.
      await alerting.dispatcher.idle();
      const firing = alerting.engine.alerts().filter((a) => a.state === 'firing');
      const t0 = performance.now();
      const cpu = process.threadCpuUsage();
      await Promise.all(firing.map((a) => alerting.engine.noteDelivered(a.id, 'bench', Date.now() + 1)));
      const used = process.threadCpuUsage(cpu);
      burst = { deliveries: firing.length, ms: performance.now() - t0, cpuMs: (used.user + used.system) / 1000 };
      log(`${firing.length} deliveries noted: ${burst.ms.toFixed(0)} ms (event loop CPU ${burst.cpuMs.toFixed(0)} ms)`);
    } finally {
      await alerting.stop();
    }
  } finally {
    await store.close();
    await sink.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const [first, ...rest] = figures as [Figure, ...Figure[]];
  const rules = groupBy ? `default rules (persisted, headroom and never_completed by ${groupBy})` : 'default rules';
  const notes = `${hooks.toLocaleString('en-US')} hooks, ${rules}, ${alerts} alerts; the first evaluation raises them, then ${rest.length} with every alert active`;
  return [
    result('alert evaluation (timer), first: wall', first.ms, 'ms', 'goal block', GOAL_BLOCK_MS, notes),
    result('alert evaluation (timer), first: event-loop CPU', first.cpuMs, 'ms', 'goal block', GOAL_BLOCK_MS, notes),
    result('alert evaluation (timer), first: longest event-loop block', first.blockMs, 'ms', 'goal block', GOAL_BLOCK_MS, notes),
    result('alert evaluation (timer), next: wall p50', percentile(rest.map((f) => f.ms), 50), 'ms', 'goal block', GOAL_BLOCK_MS, notes),
    result('alert evaluation (timer), next: event-loop CPU p50', percentile(rest.map((f) => f.cpuMs), 50), 'ms', 'goal block', GOAL_BLOCK_MS, notes),
    result('alert evaluation (timer), next: longest event-loop block p50', percentile(rest.map((f) => f.blockMs), 50), 'ms', 'goal block', GOAL_BLOCK_MS, notes),
    result('alert evaluation (timer), next: longest event-loop block max', Math.max(...rest.map((f) => f.blockMs)), 'ms', 'goal block', GOAL_BLOCK_MS, notes),
    result('deliveries noted, one per firing alert: wall', burst.ms, 'ms', 'goal block', GOAL_BLOCK_MS, `${burst.deliveries} deliveries`),
    result('deliveries noted, one per firing alert: event-loop CPU', burst.cpuMs, 'ms', 'goal block', GOAL_BLOCK_MS, `${burst.deliveries} deliveries`),
  ];
}

const USAGE = `Usage: node bench/alert-eval.ts [--quick] [--hooks N] [--evaluations N] [--group-by DIMENSION]

What one timer evaluation of the alert rules costs with many hooks, and how long it holds the event loop.
  --quick               smoke-test sizes (seconds, not minutes)
  --hooks N             hooks (default 5,000; 500 with --quick)
  --evaluations N       evaluations measured
  --group-by DIMENSION  rules grouped by this dimension
  --help                this help
`;

if (startedAsScript(import.meta.url)) {
  const values = moduleArgs(USAGE, { quick: { type: 'boolean' }, hooks: { type: 'string' }, evaluations: { type: 'string' }, 'group-by': { type: 'string' } });
  const results = await run({
    quick: values.quick === true,
    ...(values.hooks ? { hooks: Number(values.hooks) } : {}),
    ...(values.evaluations ? { evaluations: Number(values.evaluations) } : {}),
    ...(values['group-by'] ? { groupBy: values['group-by'] } : {}),
    log: (m) => console.error(`[${new Date().toISOString().slice(11, 19)}] ${m}`),
  });
  console.log(markdownTable(results));
}
