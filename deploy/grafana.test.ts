/**
 * The Grafana dashboard in deploy/grafana/ is usable as shipped: every query parses as PromQL (promtool, with
 * Grafana's variables filled in), names only series a real hookwatch exports after ingesting the captured
 * Claude Code fixtures, and groups or filters only by labels those series carry; the provisioning files point
 * Grafana at the dashboard folder and the Prometheus the compose stack runs. Over what a real hookwatch exports
 * for hooks whose sizes are unknown, the dashboard and the Prometheus rules never read unknown as 0.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import type { HooksResponse } from '../shared/src/api.ts';
import { hasPromtool, parseExposition, sampleValue, type ParsedFamily, type ParsedSample } from '../collector/test/support/prometheus-text.ts';
import { FIXTURE_RUNS, fixtureRequests, postOtlp, startTestService } from '../collector/test/helpers.ts';
import { otlpHookBody } from '../collector/test/support/alerting.ts';
import { emitExecutions } from '../collector/test/support/service.ts';
import { documentedAs, documentedMetrics, startFullyConfiguredService, type FullyConfiguredService } from '../collector/test/support/metrics-coverage.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const read = (p: string): string => readFileSync(join(ROOT, p), 'utf8');

type Doc = Record<string, unknown>;
const obj = (v: unknown): Doc => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Doc) : {});
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

const dashboard = JSON.parse(read('deploy/grafana/dashboards/hookwatch.json')) as Doc;

interface Query {
  where: string;
  expr: string;
}

/** Every panel (rows' nested panels too) with its queries. */
function panelsOf(d: Doc): Doc[] {
  return arr(d['panels']).map(obj).flatMap((p) => [p, ...panelsOf(p)]);
}

function queries(d: Doc): Query[] {
  const out: Query[] = [];
  for (const p of panelsOf(d)) {
    for (const t of arr(p['targets']).map(obj)) out.push({ where: `panel "${String(p['title'])}" ${String(t['refId'])}`, expr: String(t['expr'] ?? '') });
  }
  return out;
}

/** Grafana's built-in and dashboard variables replaced by values Prometheus accepts. */
function substitute(expr: string): string {
  return expr
    .replace(/\$__rate_interval|\$\{__rate_interval\}/g, '5m')
    .replace(/\$__range_s\b|\$\{__range_s\}/g, '86400')
    .replace(/\$__range|\$\{__range\}/g, '1d')
    .replace(/\$__interval_ms\b|\$\{__interval_ms\}/g, '60000')
    .replace(/\$__interval|\$\{__interval\}/g, '1m')
    .replace(/\$\{?hook\}?/g, '.*');
}

const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan']);

/**
 * Metric names and label names an expression uses. Strings, ranges and label matchers are taken out first; what
 * remains that is neither a function call, a keyword nor a number is a metric name.
 */
function namesIn(expr: string): { metrics: Set<string>; labels: Set<string> } {
  const labels = new Set<string>();
  let rest = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  rest = rest.replace(/\{([^}]*)\}/g, (_m, inner: string) => {
    for (const m of inner.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)/g)) labels.add(m[1] as string);
    return ' ';
  });
  rest = rest.replace(/\[[^\]]*\]/g, ' ');
  // Grafana's variables outside ranges and strings ($__range_s, $__interval_ms): numbers once filled in.
  rest = rest.replace(/\$\{?[a-zA-Z_]\w*\}?/g, ' ');
  rest = rest.replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g, (_m, _kw: string, inner: string) => {
    for (const l of inner.split(',').map((s) => s.trim()).filter(Boolean)) labels.add(l);
    return ' ';
  });
  const metrics = new Set<string>();
  for (const m of rest.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    const name = m[1] as string;
    if (m[2] || KEYWORDS.has(name.toLowerCase()) || /^\d/.test(name)) continue;
    metrics.add(name);
  }
  return { metrics, labels };
}

const HOOK_DETAIL = 'a detail of each hook, which GET /api/v1/hooks answers';
/** Metrics of docs/deploy.md's table that no panel charts, and why. */
const NOT_CHARTED = new Map<string, string>([
  ['hookwatch_hook_near_executions_total', 'the largest output against the cap (and its near-threshold line) shows hooks near it'],
  ['hookwatch_hook_starts_total', HOOK_DETAIL],
  ['hookwatch_hook_commands_total', HOOK_DETAIL],
  ['hookwatch_hook_largest_output_chars', 'since start only; hookwatch_hook_last_output_chars with max_over_time gives any window'],
  ['hookwatch_hook_guard_kept_chars_total', 'what guard keeps is its own limit, about the same for every trim; the largest output against the cap shows what the model got'],
  ['hookwatch_hook_series', 'the cap at work is charted as hooks without a series (hookwatch_hook_series_dropped)'],
  ['hookwatch_alertmanager_renewals_total', 'HookwatchAlertmanagerUnreachable alerts on its failures'],
  ['hookwatch_ingest_batches_total', 'OTLP requests and log records received chart the same flow; HookwatchNoTelemetry alerts when it stops'],
  ['hookwatch_hook_events_stored_total', 'log records received by kind chart what reaches the store'],
  ['hookwatch_hook_events_duplicate_total', 'retried batches: a detail of ingest, not a trend to watch'],
  ['hookwatch_hook_events_clamped_total', 'clients with a clock ahead: a detail of ingest, logged'],
  ['hookwatch_hook_events_expired_total', 'events older than retention: rejected in the partial success the client sees'],
  ['hookwatch_hook_events_folded_total', 'the hook_limit alert fires when the store is full of hooks; the folded hooks show as <hook_event>:(overflow)'],
  ['hookwatch_ingest_store_errors_total', 'store errors are charted by operation (hookwatch_store_errors_total)'],
  ['hookwatch_otlp_requests_held_total', 'OTLP/gRPC exports held through a store outage: how they ended is charted as OTLP requests by outcome, the outage as store errors by operation'],
  ['hookwatch_ingest_store_seconds_total', 'the commit latency is charted as its p99 (hookwatch_store_operation_duration_seconds)'],
  ['hookwatch_store_lock_timeouts_total', 'a cause of the ingest store errors, which are charted by operation; each is logged with the relation and row waited for'],
  ['hookwatch_store_inflight_operations', 'the ingest queue and the API\'s pending reads chart the load the store is under'],
  ['hookwatch_alert_evaluations_total', 'the alert engine at work: a steady count, not a trend to watch'],
  ['hookwatch_alert_label_sets_dropped_total', 'a rule over its alert limit is logged with the rule'],
  ['hookwatch_alert_notifications_created_total', 'notifications are charted by outcome (hookwatch_notifications_total)'],
  ['hookwatch_notification_tls_failures_total', 'a cause of failed notifications, which are charted; the receiver\'s logs name it'],
  ['hookwatch_tls_handshake_failures_total', 'a port\'s TLS failures: logged with the peer, for the operator of that client'],
  ['hookwatch_config_last_reload_successful', 'HookwatchConfigReloadFailed alerts while a reload is refused; the log names the problem'],
  ['hookwatch_config_last_reload_success_timestamp_seconds', 'when the configuration was last loaded: a fact to look up, not a trend to watch'],
  ['hookwatch_metrics_collector_errors_total', 'about /metrics itself: a scrape that lacks a part shows as gaps in the panels'],
  ['hookwatch_cluster_leader_info', 'which replica leads is charted as hookwatch_leader per instance'],
  ['hookwatch_cluster_leader_epoch', 'changes of leader: GET /api/v1/cluster and the dashboard\'s Replicas panel show them'],
  ['hookwatch_cluster_replica_heartbeat_timestamp_seconds', 'GET /api/v1/cluster and the dashboard\'s Replicas panel show each replica\'s heartbeat'],
  ['hookwatch_build_info', 'the version: a fact, not a trend'],
]);

/** The family a sample name belongs to (a histogram's _bucket, _sum, _count). */
function familyOf(name: string, families: Map<string, ParsedFamily>): ParsedFamily | undefined {
  return families.get(name) ?? families.get(name.replace(/_(bucket|sum|count)$/, ''));
}

interface InputSeries {
  series: string;
  values: string;
}

/** A label set as promtool writes it. */
function labelsOf(l: Record<string, string>): string {
  return `{${Object.entries(l).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(',')}}`;
}

/**
 * Runs a query (variables filled in) with promtool over input series and expects exactly these samples; with
 * `ruleFile`, its rules are evaluated over them too (their ALERTS and recorded series can be queried).
 */
function expectSamples(q: Query | undefined, series: InputSeries[], evalTime: string, expected: { labels: string; value: number }[], ruleFile?: string, interval = '1m'): void {
  expect(q).toBeDefined();
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-grafana-'));
  try {
    writeFileSync(join(dir, 'none.yml'), 'groups: []\n');
    writeFileSync(join(dir, 'test.yml'), JSON.stringify({
      rule_files: [ruleFile ?? 'none.yml'],
      tests: [{ interval, input_series: series, promql_expr_test: [{ expr: substitute(q?.expr ?? ''), eval_time: evalTime, exp_samples: expected }] }],
    }));
    const r = spawnSync('promtool', ['test', 'rules', 'test.yml'], { cwd: dir, encoding: 'utf8', timeout: 30_000 });
    expect(r.status, `${q?.where}: ${q?.expr}\n${r.stdout}${r.stderr}`).toBe(0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The fixed colour a panel's overrides give the series of one of its queries. */
function colourOf(panel: Doc | undefined, refId: string): string | undefined {
  for (const o of arr(obj(obj(panel)['fieldConfig'])['overrides']).map(obj)) {
    const m = obj(o['matcher']);
    if (m['id'] !== 'byFrameRefID' || m['options'] !== refId) continue;
    const colour = arr(o['properties']).map(obj).find((x) => x['id'] === 'color');
    if (colour) return String(obj(colour['value'])['fixedColor']);
  }
  return undefined;
}

type Sample = { labels: string; value: number };

/**
 * Runs each query of a panel over input series and expects the samples listed under the colour the panel gives
 * that query (none under a colour listed with no samples). The panel has one query per colour, in this order.
 */
function expectColoured(title: string, series: InputSeries[], evalTime: string, byColour: [string, Sample[]][]): void {
  const panel = panelsOf(dashboard).find((p) => p['title'] === title);
  const refIds = arr(obj(panel)['targets']).map((t) => String(obj(t)['refId']));
  expect(refIds.map((r) => colourOf(panel, r)), title).toEqual(byColour.map(([c]) => c));
  for (const [i, refId] of refIds.entries()) {
    const q = queries(dashboard).find((x) => x.where === `panel "${title}" ${refId}`);
    expectSamples(q, series, evalTime, byColour[i]?.[1] ?? []);
  }
}

describe('Grafana dashboard', () => {
  let full: FullyConfiguredService | undefined;
  let families = new Map<string, ParsedFamily>();
  const all = queries(dashboard);

  beforeAll(async () => {
    // A real hookwatch that has ingested every captured Claude Code run, forwarding to a local downstream and
    // notifying local receivers: the series the dashboard will see.
    full = await startFullyConfiguredService();
    const service = full.service;
    for (const run of FIXTURE_RUNS) {
      for (const r of fixtureRequests(run)) expect((await postOtlp(service.otlpHttpUrl, r.path, r.body, { 'content-type': r.contentType })).status).toBe(200);
    }
    families = parseExposition(await (await fetch(`${service.httpUrl}/metrics`)).text());
  });

  afterAll(async () => {
    await full?.close();
  });

  it('covers persisted vs success, the largest output against the cap, headroom, blind clients, guard trims, ingest and notifications', () => {
    const used = new Set(all.flatMap((q) => [...namesIn(q.expr).metrics]));
    for (const name of ['hookwatch_hook_outputs_persisted_total', 'hookwatch_hook_success_total', 'hookwatch_hook_last_output_chars', 'hookwatch_hook_size_unknown_executions_total', 'hookwatch_otlp_requests_total', 'hookwatch_otlp_requests_rejected_total', 'hookwatch_ingest_queue_depth', 'hookwatch_notifications_total', 'hookwatch_alerts', 'hookwatch_delivery_near_threshold_chars', 'hookwatch_delivery_output_cap_chars', 'hookwatch_hook_guard_trims_total']) {
      expect(used, name).toContain(name);
    }
    for (const p of panelsOf(dashboard).filter((x) => x['type'] !== 'row')) {
      expect(arr(p['targets']).length, String(p['title'])).toBeGreaterThan(0);
      expect(String(p['description'] ?? '').length, `${String(p['title'])} says what it shows`).toBeGreaterThan(20);
      expect(obj(p['datasource'])['uid'], String(p['title'])).toBe('${datasource}');
    }
    expect(all.every((q) => q.expr.length > 0)).toBe(true);
    expect(dashboard['uid']).toBe('hookwatch');
  });

  it('takes the near threshold and the cap from hookwatch, never as numbers of its own (delivery.nearThreshold can be changed)', () => {
    for (const q of all) expect(q.expr, q.where).not.toMatch(/\b(8000|10000)\b/);
    for (const p of panelsOf(dashboard)) {
      const steps = arr(obj(obj(obj(p['fieldConfig'])['defaults'])['thresholds'])['steps']).map((x) => obj(x)['value']);
      expect(steps, String(p['title'])).not.toContain(8000);
      expect(steps, String(p['title'])).not.toContain(10_000);
      expect(steps, `${String(p['title'])}: 2,000 is the cap less the default near threshold`).not.toContain(2000);
    }
  });

  it.skipIf(!hasPromtool)('draws the near threshold replicas are configured with, and colours headroom as hookwatch classifies outputs: red over the cap, orange above the near threshold, green below it (skipped only outside CI without promtool)', () => {
    const replica = (n: number): Record<string, string> => ({ job: 'hookwatch', instance: `hookwatch-${n}:9318` });
    const hook = (n: number, name: string): Record<string, string> => ({ ...replica(0), hook_id: String(n), hook_event: name.split(':')[0] as string, hook_name: name });
    const outputs = (chars: Record<string, number>): InputSeries[] => Object.entries(chars).map(([name, c], i) => ({ series: `hookwatch_hook_last_output_chars${labelsOf(hook(i + 3, name))}`, values: `${c}x30` }));
    const limits = (near: number[]): InputSeries[] => near.flatMap((n, i) => [
      { series: `hookwatch_delivery_near_threshold_chars${labelsOf(replica(i))}`, values: `${n}x30` },
      { series: `hookwatch_delivery_output_cap_chars${labelsOf(replica(i))}`, values: '10000x30' },
    ]);
    // Replicas configured with 9,000 and 8,500: the lowest is the line drawn and the one headroom is coloured by.
    // 8,200 is below it (green), though above the default 8,000.
    const hooks = { 'PostToolUse:Bash': 10_300, UserPromptSubmit: 9500, 'SessionStart:startup': 8200 };
    const series = [...outputs(hooks), ...limits([9000, 8500])];
    const lines = all.filter((x) => x.where.startsWith('panel "Largest output against the cap"'));
    expectSamples(lines.find((x) => x.where.endsWith(' B')), series, '10m', [{ labels: '{}', value: 8500 }]);
    expectSamples(lines.find((x) => x.where.endsWith(' C')), series, '10m', [{ labels: '{}', value: 10_000 }]);
    const name = (n: string): string => `{hook_name=${JSON.stringify(n)}}`;
    // Riskiest first: the bar gauge lists its queries' series in their order.
    expectColoured('Headroom per hook (24h)', series, '10m', [
      ['red', [{ labels: name('PostToolUse:Bash'), value: -300 }]],
      ['orange', [{ labels: name('UserPromptSubmit'), value: 500 }]],
      ['green', [{ labels: name('SessionStart:startup'), value: 1800 }]],
    ]);
    // With the default near threshold, 8,200 is near.
    expectColoured('Headroom per hook (24h)', [...outputs({ 'SessionStart:startup': 8200 }), ...limits([8000])], '10m', [
      ['red', []],
      ['orange', [{ labels: name('SessionStart:startup'), value: 1800 }]],
      ['green', []],
    ]);
    const smallest = (chars: Record<string, number>, near: number[], colour: string, value: number): void =>
      expectColoured('Smallest headroom (24h)', [...outputs(chars), ...limits(near)], '10m', ['red', 'orange', 'green'].map((c) => [c, c === colour ? [{ labels: '{}', value }] : []]));
    smallest(hooks, [9000, 8500], 'red', -300);
    smallest({ UserPromptSubmit: 9500, 'SessionStart:startup': 8200 }, [9000, 8500], 'orange', 500);
    smallest({ 'SessionStart:startup': 8200 }, [9000, 8500], 'green', 1800);
    smallest({ 'SessionStart:startup': 8200 }, [8000], 'orange', 1800);
    // An output of exactly the near threshold is not near, and one of exactly the cap is delivered whole.
    smallest({ 'SessionStart:startup': 8500 }, [8500], 'green', 1500);
    smallest({ 'SessionStart:startup': 10_000 }, [8500], 'orange', 0);
  });

  it('charts every metric docs/deploy.md lists, or says here why not', () => {
    const documented = documentedMetrics(read('docs/deploy.md'));
    expect(documented.length).toBeGreaterThan(40);
    const used = [...new Set(all.flatMap((q) => [...namesIn(q.expr).metrics]))].map((n) => n.replace(/_(bucket|sum|count)$/, ''));
    const charted = (name: string): boolean => used.some((u) => documentedAs(name, u));
    expect(documented.filter((m) => !charted(m) && !NOT_CHARTED.has(m))).toEqual([]);
    // The list stays true: nothing on it is charted, and nothing on it has left the table.
    expect([...NOT_CHARTED.keys()].filter((m) => charted(m) || !documented.includes(m))).toEqual([]);
  });

  it('counts per bar over the bar\'s own interval, so the bars of a range add up to its increase', () => {
    // increase() over $__rate_interval (four scrape intervals at least) per step counts each event in several bars.
    for (const p of panelsOf(dashboard)) {
      for (const t of arr(p['targets']).map(obj)) {
        const expr = String(t['expr'] ?? '');
        // Stat panels count over the whole range ($__range): one value, no bars.
        if (!expr.includes('increase(') || expr.includes('[$__range]')) continue;
        expect(expr, String(p['title'])).not.toContain('$__rate_interval');
        expect(expr, String(p['title'])).toContain('[$__interval]');
        // A floor on the step, so a bar spans at least two scrapes at any zoom, at Prometheus' default 1m too.
        expect(p['interval'], String(p['title'])).toBe('2m');
      }
    }
  });

  it('gives each series a unit that says what it counts, and puts different units on different axes', () => {
    // Grafana's ids for per-second rates (Throughput); `short` would show a rate as if it were a count.
    const PER_SECOND = new Set(['cps', 'ops', 'reqps', 'rps', 'wps', 'iops', 'eps', 'mps', 'recps', 'rowsps']);
    const kindOf = (expr: string): 'seconds' | 'per second' | 'count' => {
      if (expr.includes('histogram_quantile(')) return 'seconds';
      if (/\b(rate|irate)\(/.test(expr)) return 'per second';
      // A gauge in seconds read as it is (hookwatch_forward_oldest_age_seconds), not a counter's increase.
      const { metrics } = namesIn(expr);
      return !/\bincrease\(/.test(expr) && [...metrics].every((m) => m.endsWith('_seconds')) ? 'seconds' : 'count';
    };
    let checked = 0;
    for (const p of panelsOf(dashboard).filter((x) => x['type'] === 'timeseries')) {
      const fc = obj(p['fieldConfig']);
      const defaults = obj(fc['defaults']);
      const axes = new Map<string, string>();
      for (const t of arr(p['targets']).map(obj)) {
        // A field's config: the panel's defaults, then each override that matches its query (by refId or legend).
        const config: Record<string, unknown> = { unit: defaults['unit'], placement: obj(defaults['custom'])['axisPlacement'] ?? 'auto' };
        for (const o of arr(fc['overrides']).map(obj)) {
          const m = obj(o['matcher']);
          const hit = (m['id'] === 'byFrameRefID' && m['options'] === t['refId']) || (m['id'] === 'byName' && m['options'] === t['legendFormat']);
          if (!hit) continue;
          for (const prop of arr(o['properties']).map(obj)) {
            if (prop['id'] === 'unit') config['unit'] = prop['value'];
            if (prop['id'] === 'custom.axisPlacement') config['placement'] = prop['value'];
          }
        }
        const where = `panel "${String(p['title'])}" ${String(t['refId'])}`;
        const kind = kindOf(String(t['expr']));
        const unit = String(config['unit'] ?? 'short');
        if (kind === 'per second') expect(PER_SECOND, `${where} is a rate: unit ${unit}`).toContain(unit);
        else if (kind === 'seconds') expect(unit, where).toBe('s');
        else expect(PER_SECOND.has(unit) || unit === 's', `${where} is a count: unit ${unit}`).toBe(false);
        const placement = String(config['placement']);
        const onAxis = axes.get(placement);
        expect(onAxis === undefined || onAxis === kind, `${where}: ${kind} shares the ${placement} axis with ${onAxis}`).toBe(true);
        axes.set(placement, kind);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(10);
  });

  it.skipIf(!hasPromtool)('every query parses as PromQL (promtool check rules; skipped only outside CI without promtool)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-grafana-'));
    try {
      const rules = all.map((q, i) => `      - record: grafana:query_${i}\n        expr: ${JSON.stringify(substitute(q.expr))}`).join('\n');
      writeFileSync(join(dir, 'queries.yml'), `groups:\n  - name: grafana-dashboard\n    rules:\n${rules}\n`);
      const r = spawnSync('promtool', ['check', 'rules', join(dir, 'queries.yml')], { encoding: 'utf8', timeout: 30_000 });
      const failed = /record: grafana:query_(\d+)/.exec(r.stdout + r.stderr);
      expect(r.status, `${r.stdout}${r.stderr}${failed ? `\n${all[Number(failed[1])]?.where}` : ''}`).toBe(0);
      expect(r.stdout).toContain(`${all.length} rules found`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.skipIf(!hasPromtool)('counts each of hookwatch\'s alerts once when several replicas report the shared alert state (skipped only outside CI without promtool)', async () => {
    // Replicas on one PostgreSQL each export hookwatch_alerts read from the shared alert tables: Prometheus holds
    // the same figures once per replica, and the panel must show them once.
    let own: ParsedSample[] = [];
    // The fixtures' persisted outputs fire an alert once the engine has evaluated the ingested batches.
    for (const deadline = performance.now() + 15_000; !own.length && performance.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
      own = parseExposition(await (await fetch(`${full?.service.httpUrl}/metrics`)).text()).get('hookwatch_alerts')?.samples ?? [];
    }
    expect(own.length, 'the fixtures fire at least one alert').toBeGreaterThan(0);
    const q = all.find((x) => namesIn(x.expr).metrics.has('hookwatch_alerts'));
    expect(q).toBeDefined();
    const series = ['hookwatch-0:9318', 'hookwatch-1:9318'].flatMap((instance) => own.map((x) => ({
      series: `hookwatch_alerts${labelsOf({ ...x.labels, job: 'hookwatch', instance })}`, values: `${x.value}x10`,
    })));
    expectSamples(q, series, '5m', own.map((x) => ({ labels: labelsOf(x.labels), value: x.value })));
  });

  it.skipIf(!hasPromtool)('counts what a hook first seen since hookwatch started held when its series appeared (skipped only outside CI without promtool)', () => {
    // The first scrape of a new hook already shows its first execution (here: one persisted output); increase()
    // alone has no earlier sample to compare with. The series appears at 5m, created at 4m30s.
    const labels = { job: 'hookwatch', instance: 'hookwatch-0:9318', hook_id: '4', hook_event: 'SessionStart', hook_name: 'SessionStart:audit' };
    const series = [
      { series: `hookwatch_hook_outputs_persisted_total${labelsOf(labels)}`, values: '_x5 1x30' },
      { series: `hookwatch_hook_success_total${labelsOf(labels)}`, values: '_x5 1x30' },
      { series: `hookwatch_hook_series_start_time_seconds${labelsOf(labels)}`, values: '_x5 270x30' },
    ];
    const stat = all.find((x) => x.where.startsWith('panel "Outputs persisted in range"'));
    expectSamples(stat, series, '10m', [{ labels: '{}', value: 1 }]);
    const bars = all.filter((x) => x.where.startsWith('panel "Persisted vs success per hook"'));
    expect(bars).toHaveLength(2);
    for (const q of bars) expectSamples(q, series, '5m', [{ labels: '{hook_name="SessionStart:audit"}', value: 1 }]);
  });

  it.skipIf(!hasPromtool)('counts whole outputs and executions when the range ends between two scrapes (skipped only outside CI without promtool)', () => {
    // Scrapes every 45 s, the range ending between two: increase() stretches what it saw to the range's end
    // (1.07 for the one output), and the larger of it and the young series' exact count was that stretched figure.
    const labels = { job: 'hookwatch', instance: 'hookwatch-0:9318', hook_id: '4', hook_event: 'Stop', hook_name: 'Stop' };
    const series = [
      { series: `hookwatch_hook_outputs_persisted_total${labelsOf(labels)}`, values: '_x8 0 1x30' },
      { series: `hookwatch_hook_executions_with_persisted_total${labelsOf(labels)}`, values: '_x8 0 1x30' },
      { series: `hookwatch_hook_executions_total${labelsOf(labels)}`, values: '_x8 0 1 2 3 4x30' },
      { series: `hookwatch_hook_series_start_time_seconds${labelsOf(labels)}`, values: '_x8 350x31' },
    ];
    expectSamples(all.find((x) => x.where === 'panel "Outputs persisted in range" A'), series, '10m', [{ labels: '{}', value: 1 }], undefined, '45s');
    expectSamples(all.find((x) => x.where.startsWith('panel "Executions in range"')), series, '10m', [{ labels: '{}', value: 4 }], undefined, '45s');
  });

  it.skipIf(!hasPromtool)('counts a new hook\'s first executions exactly at a 15-second scrape, not stretched to the range\'s end (skipped only outside CI without promtool)', () => {
    // Shown at 0 at 1m30s (created at 1m25s), its first executions counted at 1m45s, the range or bar ending at 2m:
    // of two samples, increase() stretches each count to the end (6 executions read 12); the series is younger
    // than the range and the bar, so its whole count is the count.
    const labels = { job: 'hookwatch', instance: 'hookwatch-0:9318', hook_id: '4', hook_event: 'Stop', hook_name: 'Stop:young' };
    const series = [
      { series: `hookwatch_hook_executions_total${labelsOf(labels)}`, values: '_x6 0 6' },
      { series: `hookwatch_hook_success_total${labelsOf(labels)}`, values: '_x6 0 6' },
      { series: `hookwatch_hook_outputs_persisted_total${labelsOf(labels)}`, values: '_x6 0 3' },
      { series: `hookwatch_hook_executions_with_persisted_total${labelsOf(labels)}`, values: '_x6 0 3' },
      { series: `hookwatch_hook_size_unknown_executions_total${labelsOf(labels)}`, values: '_x6 0 2' },
      { series: `hookwatch_hook_persisted_unreported_executions_total${labelsOf(labels)}`, values: '_x6 0 1' },
      { series: `hookwatch_hook_guard_trims_total${labelsOf(labels)}`, values: '_x6 0 2' },
      { series: `hookwatch_hook_guard_sent_chars_total${labelsOf(labels)}`, values: '_x6 0 18000' },
      { series: `hookwatch_hook_series_start_time_seconds${labelsOf(labels)}`, values: '_x6 85 85' },
    ];
    const one = (where: string): Query | undefined => all.find((x) => x.where === where);
    expectSamples(one('panel "Executions in range" A'), series, '2m', [{ labels: '{}', value: 6 }], undefined, '15s');
    expectSamples(one('panel "Outputs persisted in range" A'), series, '2m', [{ labels: '{}', value: 3 }], undefined, '15s');
    expectSamples(one('panel "Executions without size data" A'), series, '2m', [{ labels: '{}', value: 2 / 6 }], undefined, '15s');
    const hook = '{hook_name="Stop:young"}';
    for (const [where, value] of [
      ['panel "Persisted vs success per hook" A', 6], ['panel "Persisted vs success per hook" B', 3],
      ['panel "Blind executions per hook" A', 2], ['panel "Blind executions per hook" B', 1],
      ['panel "Guard trims per hook" A', 2], ['panel "Guard trims per hook" B', 9000],
    ] as const) expectSamples(one(where), series, '2m', [{ labels: hook, value }], undefined, '15s');
  });

  it.skipIf(!hasPromtool)('counts what a hook first seen since hookwatch started held when its series appeared, across a restart in the range (skipped only outside CI without promtool)', () => {
    // As above, the series appearing at 5m with its output (created at 4m30s); hookwatch restarts at 6m30s and
    // gives the hook its series again at 0.
    const labels = { job: 'hookwatch', instance: 'hookwatch-0:9318', hook_id: '4', hook_event: 'SessionStart', hook_name: 'SessionStart:audit' };
    const series = [
      { series: `hookwatch_hook_outputs_persisted_total${labelsOf(labels)}`, values: '_x5 1x1 0x30' },
      { series: `hookwatch_hook_series_start_time_seconds${labelsOf(labels)}`, values: '_x5 270x1 390x30' },
    ];
    expectSamples(all.find((x) => x.where.startsWith('panel "Outputs persisted in range"')), series, '20m', [{ labels: '{}', value: 1 }]);
  });

  it.skipIf(!hasPromtool)('counts what a restarted hook\'s new series held when it appeared, though the hook\'s older series held as much (skipped only outside CI without promtool)', () => {
    // A hook with a series older than the range (one persisted output long ago) restarts at 5m30s; this Prometheus
    // missed the new series' render at 0, and its first sample at 6m holds the new output: 1 again, so increase()
    // sees no change, and the earliest start time in the range or the bar is the old one.
    const labels = { job: 'hookwatch', instance: 'hookwatch-0:9318', hook_id: '4', hook_event: 'SessionStart', hook_name: 'SessionStart:audit' };
    const series = [
      { series: `hookwatch_hook_outputs_persisted_total${labelsOf(labels)}`, values: '1x5 1x30' },
      { series: `hookwatch_hook_success_total${labelsOf(labels)}`, values: '1x5 1x30' },
      { series: `hookwatch_hook_series_start_time_seconds${labelsOf(labels)}`, values: '-200000x5 330x30' },
    ];
    expectSamples(all.find((x) => x.where.startsWith('panel "Outputs persisted in range"')), series, '10m', [{ labels: '{}', value: 1 }]);
    const bars = all.filter((x) => x.where.startsWith('panel "Persisted vs success per hook"'));
    expect(bars).toHaveLength(2);
    for (const q of bars) expectSamples(q, series, '6m', [{ labels: '{hook_name="SessionStart:audit"}', value: 1 }]);
  });

  it.skipIf(!hasPromtool)('counts the persisted outputs of hooks without a series beside the others, across a restart (skipped only outside CI without promtool)', () => {
    // A hook with a series persists one output at 5m; a hook past metrics.maxHookSeries two at 6m, on a replica
    // that restarts at 8m30s (its overflow counter back at 0, a new start time).
    const labels = { job: 'hookwatch', instance: 'hookwatch-0:9318', hook_id: '4', hook_event: 'SessionStart', hook_name: 'SessionStart:audit' };
    const replica = labelsOf({ job: 'hookwatch', instance: 'hookwatch-1:9318' });
    const series = [
      { series: `hookwatch_hook_outputs_persisted_total${labelsOf(labels)}`, values: '0x4 1x30' },
      { series: `hookwatch_hook_series_start_time_seconds${labelsOf(labels)}`, values: '-3600x34' },
      { series: `hookwatch_hook_overflow_outputs_persisted_total${replica}`, values: '0x5 2x2 0x30' },
      { series: `process_start_time_seconds${replica}`, values: '-3600x7 510x30' },
    ];
    const stat = all.filter((x) => x.where.startsWith('panel "Outputs persisted in range"'));
    expect(stat.map((q) => q.where)).toEqual(['panel "Outputs persisted in range" A', 'panel "Outputs persisted in range" B']);
    const [withSeries, without] = stat;
    expectSamples(withSeries, series, '20m', [{ labels: '{}', value: 1 }]);
    expectSamples(without, series, '20m', [{ labels: '{}', value: 2 }]);
  });

  it.skipIf(!hasPromtool)('counts the persisted outputs of hooks without a series counted before a new process\'s first scrape, across a restart in the range (skipped only outside CI without promtool)', () => {
    // A replica started at 4m30s, its first scrape at 5m already counting two outputs of a hook past
    // metrics.maxHookSeries; it restarts at 7m30s (its overflow counter back at 0, a new start time).
    const replica = labelsOf({ job: 'hookwatch', instance: 'hookwatch-1:9318' });
    const series = [
      { series: `hookwatch_hook_overflow_outputs_persisted_total${replica}`, values: '_x5 2x2 0x30' },
      { series: `process_start_time_seconds${replica}`, values: '_x5 270x2 450x30' },
    ];
    expectSamples(all.find((x) => x.where === 'panel "Outputs persisted in range" B'), series, '20m', [{ labels: '{}', value: 2 }]);
  });

  it.skipIf(!hasPromtool)('counts the executions and blind executions a new hook\'s series held when it appeared (skipped only outside CI without promtool)', () => {
    // Two hooks first seen since hookwatch started, their series appearing at 5m (created at 4m30s) with their
    // first executions counted: one from a client with size data, one from a client without (blind).
    const sized = { job: 'hookwatch', instance: 'hookwatch-0:9318', hook_id: '4', hook_event: 'SessionStart', hook_name: 'SessionStart:audit' };
    const blind = { job: 'hookwatch', instance: 'hookwatch-0:9318', hook_id: '9', hook_event: 'Stop', hook_name: 'Stop:legacy' };
    const series = [
      { series: `hookwatch_hook_executions_total${labelsOf(sized)}`, values: '_x5 1x30' },
      { series: `hookwatch_hook_size_unknown_executions_total${labelsOf(sized)}`, values: '_x5 0x30' },
      { series: `hookwatch_hook_series_start_time_seconds${labelsOf(sized)}`, values: '_x5 270x30' },
      { series: `hookwatch_hook_executions_total${labelsOf(blind)}`, values: '_x5 3x30' },
      { series: `hookwatch_hook_size_unknown_executions_total${labelsOf(blind)}`, values: '_x5 3x30' },
      { series: `hookwatch_hook_series_start_time_seconds${labelsOf(blind)}`, values: '_x5 270x30' },
    ];
    expectSamples(all.find((x) => x.where.startsWith('panel "Executions in range"')), series, '10m', [{ labels: '{}', value: 4 }]);
    expectSamples(all.find((x) => x.where.startsWith('panel "Executions without size data"')), series, '10m', [{ labels: '{}', value: 0.75 }]);
    expectSamples(all.find((x) => x.where.startsWith('panel "Blind executions per hook"')), series, '5m', [
      { labels: '{hook_name="SessionStart:audit"}', value: 0 },
      { labels: '{hook_name="Stop:legacy"}', value: 3 },
    ]);
  });

  it.skipIf(!hasPromtool)('charts guard trims per hook over replicas, with what a new hook\'s series held when it appeared (skipped only outside CI without promtool)', () => {
    // A guarded hook on two replicas: one stored 2 trims before its series was first scraped (it appears at 5m,
    // created at 4m30s), the other 1 trim in the minute before 7m; an unguarded hook next to it.
    const a = { job: 'hookwatch', instance: 'hookwatch-0:9318', hook_id: '4', hook_event: 'SessionStart', hook_name: 'SessionStart:startup' };
    const b = { ...a, instance: 'hookwatch-1:9318' };
    const plain = { ...a, hook_id: '5', hook_event: 'Stop', hook_name: 'Stop' };
    const series = [
      { series: `hookwatch_hook_guard_trims_total${labelsOf(a)}`, values: '_x5 2x30' },
      { series: `hookwatch_hook_guard_sent_chars_total${labelsOf(a)}`, values: '_x5 36000x30' },
      { series: `hookwatch_hook_series_start_time_seconds${labelsOf(a)}`, values: '_x5 270x30' },
      { series: `hookwatch_hook_guard_trims_total${labelsOf(b)}`, values: '0x6 1x30' },
      { series: `hookwatch_hook_guard_sent_chars_total${labelsOf(b)}`, values: '0x6 12000x30' },
      { series: `hookwatch_hook_series_start_time_seconds${labelsOf(b)}`, values: '0x40' },
      { series: `hookwatch_hook_guard_trims_total${labelsOf(plain)}`, values: '0x40' },
      { series: `hookwatch_hook_guard_sent_chars_total${labelsOf(plain)}`, values: '0x40' },
      { series: `hookwatch_hook_series_start_time_seconds${labelsOf(plain)}`, values: '0x40' },
    ];
    const panel = all.filter((x) => x.where.startsWith('panel "Guard trims per hook"'));
    expect(panel).toHaveLength(2);
    const [trims, average] = panel;
    expectSamples(trims, series, '5m', [{ labels: '{hook_name="SessionStart:startup"}', value: 2 }, { labels: '{hook_name="Stop"}', value: 0 }]);
    expectSamples(average, series, '5m', [{ labels: '{hook_name="SessionStart:startup"}', value: 18_000 }]);
    // The bar ending at 7m holds the other replica's trim only; the unguarded hook has no average.
    expectSamples(trims, series, '7m', [{ labels: '{hook_name="SessionStart:startup"}', value: 1 }, { labels: '{hook_name="Stop"}', value: 0 }]);
    expectSamples(average, series, '7m', [{ labels: '{hook_name="SessionStart:startup"}', value: 12_000 }]);
  });

  it('names only series a running hookwatch exports, and only labels they carry', () => {
    const exposed = [...families.keys()];
    expect(exposed.length).toBeGreaterThan(20);
    const variableQueries = arr(obj(dashboard['templating'])['list']).map(obj).filter((v) => v['type'] === 'query')
      .map((v) => ({ where: `variable ${String(v['name'])}`, expr: String(v['definition']) }));
    expect(variableQueries.length).toBeGreaterThan(0);
    let labelsChecked = 0;
    for (const q of [...all, ...variableQueries]) {
      const isLabelValues = /^label_values\(/.test(q.expr);
      const { metrics, labels } = namesIn(isLabelValues ? q.expr.replace(/^label_values\((.*)\)$/, '$1').replace(/,\s*([a-z_]+)\s*$/, '{$1=""}') : q.expr);
      expect(metrics.size, `${q.where}: ${q.expr}`).toBeGreaterThan(0);
      // le from histograms; job and instance are the target labels Prometheus adds to every scraped series.
      const seenLabels = new Set<string>(['le', 'job', 'instance']);
      let sampled = false;
      for (const name of metrics) {
        const family = familyOf(name, families);
        expect(family, `${q.where} uses ${name}, which hookwatch does not export`).toBeDefined();
        for (const s of family?.samples ?? []) {
          sampled = true;
          for (const l of Object.keys(s.labels)) seenLabels.add(l);
        }
      }
      if (!sampled) continue; // No sample yet (e.g. no alert): the names are checked, the labels cannot be.
      for (const l of labels) expect(seenLabels, `${q.where} uses label ${l}`).toContain(l);
      labelsChecked++;
    }
    expect(labelsChecked).toBeGreaterThan(all.length / 2);
  });

  it('names in its legends only labels its queries keep', () => {
    // Each query aggregates: a label it does not group by is gone from its series, and the legend would show it empty.
    let checked = 0;
    for (const p of panelsOf(dashboard)) {
      for (const t of arr(p['targets']).map(obj)) {
        const kept = namesIn(String(t['expr'] ?? '')).labels;
        for (const m of String(t['legendFormat'] ?? '').matchAll(/\{\{\s*([a-zA-Z_]\w*)\s*\}\}/g)) {
          expect(kept, `panel "${String(p['title'])}" ${String(t['refId'])}: {{${m[1] as string}}}`).toContain(m[1]);
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(20);
  });

  it('is provisioned in the compose stack: Grafana loads it from the mounted folder over the stack\'s Prometheus', () => {
    const compose = obj(parseYaml(read('docker-compose.yml')));
    const services = obj(compose['services']);
    const grafana = obj(services['grafana']);
    expect(String(grafana['image'])).toMatch(/^grafana\/grafana:\d+\.\d+\.\d+$/);
    const mounts = arr(grafana['volumes']).map((v) => String(v).split(':'));
    const dashboardsTarget = mounts.find((m) => m[0] === './deploy/grafana/dashboards')?.[1];
    expect(mounts.find((m) => m[0] === './deploy/grafana/provisioning')?.[1]).toBe('/etc/grafana/provisioning');
    const provider = obj(arr(obj(parseYaml(read('deploy/grafana/provisioning/dashboards/hookwatch.yml')))['providers'])[0]);
    expect(obj(provider['options'])['path']).toBe(dashboardsTarget);
    const ds = obj(arr(obj(parseYaml(read('deploy/grafana/provisioning/datasources/prometheus.yml')))['datasources'])[0]);
    expect(ds['type']).toBe('prometheus');
    const prometheus = obj(services['prometheus']);
    expect(ds['url']).toBe(`http://prometheus:${String(arr(prometheus['ports'])[0]).split(':').pop()}`);
    expect(grafana['profiles']).toEqual(prometheus['profiles']);
    // Prometheus in the same stack scrapes hookwatch, so the dashboard has data.
    const scrape = obj(arr(obj(parseYaml(read('deploy/prometheus/prometheus.yml')))['scrape_configs'])[0]);
    expect(JSON.stringify(scrape['static_configs'])).toContain('hookwatch:');
  });
});

describe('Grafana dashboard and Prometheus rules, for hooks whose sizes are unknown', () => {
  it.skipIf(!hasPromtool)('show no size for a hook seen only from a client without sizes, and count an output measured over the cap at least once (skipped only outside CI without promtool)', async () => {
    // A real hookwatch: one hook from a client that sends no size attributes; one whose client sends sizes but no
    // num_outputs_persisted, with an output measured over the cap and an execution without sizes.
    const service = await startTestService();
    try {
      await emitExecutions(service.otlpHttpUrl, [{ hookEvent: 'Stop', hookName: 'Stop:legacy' }, { hookEvent: 'Stop', hookName: 'Stop:legacy' }, { hookEvent: 'PreToolUse', hookName: 'PreToolUse:mixed' }]);
      const res = await postOtlp(service.otlpHttpUrl, '/v1/logs', otlpHookBody([{ hookName: 'PreToolUse:mixed', timeMs: Date.now(), outputsPersisted: null, additionalContextChars: 12_000 }]), { 'content-type': 'application/json' });
      expect(res.status).toBe(200);
      // The first render shows the new hooks' series at 0; the next one their counts.
      await (await fetch(`${service.httpUrl}/metrics`)).text();
      const families = parseExposition(await (await fetch(`${service.httpUrl}/metrics`)).text());
      // Its series as Prometheus holds them, first scraped at 5m and created at 4m30s (hooks first seen since start).
      const series: InputSeries[] = [...families.values()].flatMap((f) => f.samples.flatMap((x) => {
        if (!x.name.startsWith('hookwatch_hook_') && !x.name.startsWith('hookwatch_delivery_')) return [];
        const value = x.name === 'hookwatch_hook_series_start_time_seconds' ? 270 : x.value;
        return [{ series: `${x.name}${labelsOf({ ...x.labels, job: 'hookwatch', instance: 'hookwatch-0:9318' })}`, values: `_x5 ${value}x30` }];
      }));
      const sizes = series.filter((x) => /^hookwatch_hook_(last|largest)_output_chars\{/.test(x.series)).map((x) => /hook_name="([^"]*)"/.exec(x.series)?.[1]);
      expect(sizes, 'no size gauge for a hook without sizes').toEqual(['PreToolUse:mixed', 'PreToolUse:mixed']);
      const all = queries(dashboard);
      const name = (n: string): string => `{hook_name=${JSON.stringify(n)}}`;
      // No headroom for the hook without sizes (never the cap's 10,000); the measured one is over the cap.
      expectColoured('Headroom per hook (24h)', series, '10m', [['red', [{ labels: name('PreToolUse:mixed'), value: -2060 }]], ['orange', []], ['green', []]]);
      expectSamples(all.find((x) => x.where.startsWith('panel "Largest output against the cap" A')), series, '10m', [{ labels: name('PreToolUse:mixed'), value: 12_060 }]);
      // The output measured over the cap counts once, at least: never 0 outputs persisted.
      const q = (expr: string): Query => ({ where: expr, expr });
      const persisted = all.find((x) => x.where === 'panel "Outputs persisted in range" A');
      expectSamples(persisted, series, '10m', [{ labels: '{}', value: 1 }]);
      // The hook without sizes alone: whether its outputs were persisted is unknown (NaN, shown as "unknown"), not 0.
      const legacy = (persisted?.expr ?? '').replaceAll('$hook', 'Stop:legacy');
      expect(arr(obj(obj(panelsOf(dashboard).find((x) => x['title'] === 'Outputs persisted in range')?.['fieldConfig'])['defaults'])['mappings']).map(obj)).toContainEqual(expect.objectContaining({ type: 'special', options: expect.objectContaining({ match: 'nan', result: expect.objectContaining({ text: 'unknown' }) }) }));
      expectSamples(q(`count((${legacy}) != (${legacy}))`), series, '10m', [{ labels: '{}', value: 1 }]);
      expectSamples(q(`count(${legacy})`), series, '10m', [{ labels: '{}', value: 1 }]);
      expectSamples(all.find((x) => x.where === 'panel "Persisted vs success per hook" B'), series, '5m', [{ labels: name('PreToolUse:mixed'), value: 1 }, { labels: name('Stop:legacy'), value: 0 }]);
      const rules = join(ROOT, 'deploy/prometheus/rules.yml');
      expectSamples(q('ALERTS{alertname="HookOutputPersisted"}'), series, '10m', [
        { labels: '{__name__="ALERTS",alertname="HookOutputPersisted",alertstate="firing",hook_event="PreToolUse",hook_name="PreToolUse:mixed",severity="critical"}', value: 1 },
      ], rules);
      expectSamples(q('hookwatch:hook_outputs_persisted:increase1h'), series, '10m', [
        { labels: 'hookwatch:hook_outputs_persisted:increase1h{hook_event="PreToolUse",hook_name="PreToolUse:mixed"}', value: 1 },
        { labels: 'hookwatch:hook_outputs_persisted:increase1h{hook_event="Stop",hook_name="Stop:legacy"}', value: 0 },
      ], rules);
      expectSamples(q('hookwatch:hook_largest_output_chars:max24h'), series, '10m', [
        { labels: 'hookwatch:hook_largest_output_chars:max24h{hook_event="PreToolUse",hook_name="PreToolUse:mixed"}', value: 12_060 },
      ], rules);
    } finally {
      await service.close();
    }
  });

  it.skipIf(!hasPromtool)('tell executions whose client did not report num_outputs_persisted from those reported with none (skipped only outside CI without promtool)', async () => {
    // Two hooks with the same output near the cap: one client reports num_outputs_persisted 0, the other sends the
    // sizes without it, so whether its output was persisted is unknown.
    const service = await startTestService();
    try {
      await emitExecutions(service.otlpHttpUrl, [{ hookEvent: 'PreToolUse', hookName: 'PreToolUse:reported', additionalContextChars: 9_500, outputsPersisted: 0 }]);
      const res = await postOtlp(service.otlpHttpUrl, '/v1/logs', otlpHookBody([{ hookName: 'PreToolUse:unreported', timeMs: Date.now(), outputsPersisted: null, additionalContextChars: 9_500 }]), { 'content-type': 'application/json' });
      expect(res.status).toBe(200);
      await emitExecutions(service.otlpHttpUrl, [{ hookEvent: 'Stop', hookName: 'Stop:legacy' }]);
      await (await fetch(`${service.httpUrl}/metrics`)).text();
      const families = parseExposition(await (await fetch(`${service.httpUrl}/metrics`)).text());
      const unreported = (hookName: string): number | undefined => sampleValue(families, 'hookwatch_hook_persisted_unreported_executions_total', { hook_name: hookName });
      // A client without sizes is blind, counted there, not here.
      expect([unreported('PreToolUse:reported'), unreported('PreToolUse:unreported'), unreported('Stop:legacy')]).toEqual([0, 1, 0]);
      expect(sampleValue(families, 'hookwatch_hook_overflow_persisted_unreported_executions_total')).toBe(0);
      const series: InputSeries[] = [...families.values()].flatMap((f) => f.samples.flatMap((x) => {
        if (!x.name.startsWith('hookwatch_hook_')) return [];
        const value = x.name === 'hookwatch_hook_series_start_time_seconds' ? -3600 : x.value;
        return [{ series: `${x.name}${labelsOf({ ...x.labels, job: 'hookwatch', instance: 'hookwatch-0:9318' })}`, values: `${x.name === 'hookwatch_hook_series_start_time_seconds' ? value : 0}x4 ${value}x30` }];
      }));
      const name = (n: string): string => `{hook_name=${JSON.stringify(n)}}`;
      expectSamples(queries(dashboard).find((x) => x.where === 'panel "Blind executions per hook" B'), series, '5m', [
        { labels: name('PreToolUse:reported'), value: 0 },
        { labels: name('PreToolUse:unreported'), value: 1 },
        { labels: name('Stop:legacy'), value: 0 },
      ]);
    } finally {
      await service.close();
    }
  });

  it.skipIf(!hasPromtool)('count an output measured over the cap of a hook without a series at least once, in the dashboard and HookOutputPersistedWithoutSeries (skipped only outside CI without promtool)', async () => {
    // A real hookwatch with one series: its hook takes it; a hook past metrics.maxHookSeries, whose client sends
    // sizes but no num_outputs_persisted, has an output measured over the cap; a third, from a client without
    // sizes, is blind.
    const service = await startTestService({ HOOKWATCH_METRICS_MAX_HOOK_SERIES: '1' });
    try {
      await emitExecutions(service.otlpHttpUrl, [{ hookEvent: 'Stop', hookName: 'Stop:report', additionalContextChars: 100, outputsPersisted: 0 }]);
      const res = await postOtlp(service.otlpHttpUrl, '/v1/logs', otlpHookBody([{ hookName: 'PreToolUse:mixed', timeMs: Date.now(), outputsPersisted: null, additionalContextChars: 12_000 }]), { 'content-type': 'application/json' });
      expect(res.status).toBe(200);
      await emitExecutions(service.otlpHttpUrl, [{ hookEvent: 'Stop', hookName: 'Stop:legacy' }]);
      await (await fetch(`${service.httpUrl}/metrics`)).text();
      const families = parseExposition(await (await fetch(`${service.httpUrl}/metrics`)).text());
      expect(sampleValue(families, 'hookwatch_hook_series_dropped')).toBe(2);
      expect(sampleValue(families, 'hookwatch_hook_overflow_executions_total')).toBe(2);
      // What hookwatch's API says of the two: one execution over the cap (measured), one without sizes.
      const hooks = await (await fetch(`${service.httpUrl}/api/v1/hooks?from=now-1h`)).json() as HooksResponse;
      const overflowing = hooks.hooks.filter((h) => h.hookName !== 'Stop:report');
      const total = (f: 'executionsWithPersisted' | 'sizeUnknownExecutions'): number => overflowing.reduce((n, h) => n + h[f], 0);
      expect([total('executionsWithPersisted'), total('sizeUnknownExecutions')]).toEqual([1, 1]);
      expect(sampleValue(families, 'hookwatch_hook_overflow_executions_with_persisted_total')).toBe(total('executionsWithPersisted'));
      expect(sampleValue(families, 'hookwatch_hook_overflow_size_unknown_executions_total')).toBe(total('sizeUnknownExecutions'));
      // The overflow counters as Prometheus holds them: on /metrics at 0 from the start of a process an hour old,
      // the outputs counted from 5m.
      const replica = { job: 'hookwatch', instance: 'hookwatch-0:9318' };
      const series: InputSeries[] = [
        ...[...families.values()].flatMap((f) => f.samples.filter((x) => x.name.startsWith('hookwatch_hook_overflow_')).map((x) => ({ series: `${x.name}${labelsOf({ ...x.labels, ...replica })}`, values: `0x4 ${x.value}x30` }))),
        { series: `process_start_time_seconds${labelsOf(replica)}`, values: '-3600x34' },
      ];
      const all = queries(dashboard);
      expectSamples(all.find((x) => x.where === 'panel "Outputs persisted in range" B'), series, '10m', [{ labels: '{}', value: 1 }]);
      const rules = join(ROOT, 'deploy/prometheus/rules.yml');
      const alert = { where: 'HookOutputPersistedWithoutSeries', expr: 'ALERTS{alertname="HookOutputPersistedWithoutSeries"}' };
      expectSamples(alert, series, '10m', [{ labels: '{__name__="ALERTS",alertname="HookOutputPersistedWithoutSeries",alertstate="firing",severity="critical"}', value: 1 }], rules);
      // 15 minutes after the output it resolves.
      expectSamples(alert, series, '21m', [], rules);
    } finally {
      await service.close();
    }
  });
});
