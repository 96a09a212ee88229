/**
 * The registry around prom-client: what a stage registers comes out as an exposition Prometheus accepts
 * (promtool), client-supplied label values survive the round trip, and a collect callback that throws costs
 * its own samples only, counted once per scrape; two scrapes at once get every sample (one render at a time).
 */
import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { gunzipSync } from 'node:zlib';
import express from 'express';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { checkExposition, hasPromtool, parseExposition, requestMetrics, sampleValue } from '../../test/support/prometheus-text.ts';
import type { Logger } from './logger.ts';
import { EXPOSITION_CONTENT_TYPE, MetricsRegistry } from './metrics.ts';

function recordingLogger(): { logger: Logger; warnings: Record<string, unknown>[] } {
  const warnings: Record<string, unknown>[] = [];
  return { logger: { debug() {}, info() {}, error() {}, warn: (msg, fields) => warnings.push({ msg, ...fields }) }, warnings };
}

describe('MetricsRegistry exposition', () => {
  it('round-trips any label value (hook names come from clients)', async () => {
    const seen: string[] = [];
    await fc.assert(fc.asyncProperty(fc.string({ unit: 'grapheme', maxLength: 40 }), fc.nat(), async (hookName, value) => {
      const metrics = new MetricsRegistry();
      metrics.collectedCounter('hooks', { name: 'x_total', help: 'h', labelNames: ['hook_name'], collect: (set) => set({ hook_name: hookName }, value) });
      const text = await metrics.render();
      seen.push(text);
      expect(sampleValue(parseExposition(text), 'x_total', { hook_name: hookName })).toBe(value);
    }), { numRuns: 300 });
    // Prometheus's own parser reads a sample of them too (one promtool run per exposition is too slow for 300).
    for (const text of seen.slice(0, 5)) checkExposition(text);
  });

  it('escapes quotes, backslashes and newlines the way Prometheus reads them', async () => {
    const nasty = 'PreToolUse:Bash|"x"\\y\nz';
    const metrics = new MetricsRegistry();
    metrics.collectedCounter('hooks', { name: 'hookwatch_x_total', help: 'multi\nline \\ help', labelNames: ['hook_name'], collect: (set) => set({ hook_name: nasty }, 3) });
    const text = await metrics.render();
    expect(text).toContain('# HELP hookwatch_x_total multi\\nline \\\\ help\n# TYPE hookwatch_x_total counter\nhookwatch_x_total{hook_name="PreToolUse:Bash|\\"x\\"\\\\y\\nz"} 3\n');
    checkExposition(text);
  });

  it('writes infinities and NaN so Prometheus parses them', async () => {
    const metrics = new MetricsRegistry();
    metrics.collectedGauge('t', {
      name: 'g', help: 'h', labelNames: ['a'],
      collect: (set) => {
        set({ a: '1' }, NaN);
        set({ a: '2' }, Infinity);
        set({ a: '3' }, -Infinity);
        set({ a: '4' }, 0.25);
      },
    });
    const text = await metrics.render();
    const families = parseExposition(text);
    expect([sampleValue(families, 'g', { a: '1' }), sampleValue(families, 'g', { a: '2' }), sampleValue(families, 'g', { a: '3' }), sampleValue(families, 'g', { a: '4' })]).toEqual([NaN, Infinity, -Infinity, 0.25]);
    checkExposition(text);
  });

  it('refuses at registration what Prometheus would not parse, and a name registered twice', () => {
    const metrics = new MetricsRegistry();
    expect(() => metrics.gauge({ name: 'bad-name', help: 'h' })).toThrow(/name/);
    expect(() => metrics.counter({ name: 'c', help: 'h' })).toThrow(/_total/);
    expect(() => metrics.collectedCounter('s', { name: 'c', help: 'h', collect: () => {} })).toThrow(/_total/);
    expect(() => metrics.gauge({ name: 'g', help: 'h', labelNames: ['a-b'] })).toThrow(/label name/);
    metrics.gauge({ name: 'g', help: 'h' });
    expect(() => metrics.collectedGauge('s', { name: 'g', help: 'h', collect: () => {} })).toThrow(/already been registered/);
  });

  it('gives a collected metric no sample when the stage sets none (unknown is not zero)', async () => {
    const metrics = new MetricsRegistry();
    let age: number | null = null;
    metrics.collectedGauge('forward', { name: 'oldest_seconds', help: 'h', collect: (set) => (age === null ? undefined : set({}, age)) });
    expect(parseExposition(await metrics.render()).get('oldest_seconds')?.samples).toEqual([]);
    age = 4;
    expect(sampleValue(parseExposition(await metrics.render()), 'oldest_seconds')).toBe(4);
    age = null;
    expect(parseExposition(await metrics.render()).get('oldest_seconds')?.samples).toEqual([]);
  });

  /** A registry of three gauges, each noting how many event-loop turns had passed when it was collected. */
  function turnCounting(sliceMs: number): { metrics: MetricsRegistry; seen: number[] } {
    const metrics = new MetricsRegistry({ sliceMs });
    let turns = 0;
    const seen: number[] = [];
    for (const name of ['a', 'b', 'c']) {
      metrics.collectedGauge('hooks', {
        name, help: 'h',
        collect: (set) => {
          seen.push(turns);
          setImmediate(() => turns++);
          set({}, 1);
        },
      });
    }
    return { metrics, seen };
  }

  it('lets the event loop turn between two families once a render has run its slice, so a large scrape holds up requests for a slice at most', async () => {
    // Thousands of per-hook series take prom-client hundreds of milliseconds to write; done in one go, OTLP
    // requests and probes would wait for all of it. A slice of 0: every family is past it.
    const { metrics, seen } = turnCounting(0);
    await metrics.render();
    expect(seen).toEqual([0, 1, 2]);
  });

  it('writes the families of a render within its slice in one go, so a scrape does not wait a turn per family', async () => {
    // Each turn may wait behind a slice of a large OTLP batch being committed: a turn per family made a scrape
    // during one take as many slices as there are families.
    const { metrics, seen } = turnCounting(60_000);
    await metrics.render();
    expect(seen).toEqual([0, 0, 0]);
  });

  it('shows a counter read from a stage at its current value, not a sum of scrapes', async () => {
    const metrics = new MetricsRegistry();
    const stats = { requests: 2 };
    metrics.collectedCounter('otlp', { name: 'r_total', help: 'h', collect: (set) => set({}, stats.requests) });
    await metrics.render();
    stats.requests = 5;
    expect(sampleValue(parseExposition(await metrics.render()), 'r_total')).toBe(5);
  });
});

/**
 * Reads a collect waits for, answered by the test: `read(value)` resolves when released, and `releaseUntil`
 * releases the oldest one at each turn of the event loop until `done` settles, as answers of a store come in.
 */
function heldReads(): { read<T>(value: T): Promise<T>; waiting(): number; releaseOne(): void; releaseUntil(done: Promise<unknown>): Promise<void> } {
  const held: (() => void)[] = [];
  return {
    read: (value) => new Promise((resolve) => held.push(() => resolve(value))),
    waiting: () => held.length,
    releaseOne: () => held.shift()?.(),
    async releaseUntil(done) {
      let settled = false;
      void done.finally(() => (settled = true));
      while (!settled) {
        await nextTurn();
        held.shift()?.();
      }
    },
  };
}

describe('MetricsRegistry concurrent scrapes', () => {
  // Both servers of a Prometheus HA pair scrape every target, so two scrapes at once are normal; the families
  // read from the store wait on I/O in the middle of a scrape.
  it('gives each of two overlapping scrapes every sample of a family whose collect waits on the store between two', async () => {
    const metrics = new MetricsRegistry();
    const store = heldReads();
    metrics.collectedGauge('store', {
      name: 'rows', help: 'h', labelNames: ['table'],
      collect: async (set) => {
        set({ table: 'events' }, await store.read(7));
        set({ table: 'rollups' }, await store.read(3));
      },
    });
    const first = metrics.render();
    while (store.waiting() === 0) await nextTurn();
    store.releaseOne(); // the first scrape has its events sample and waits for the rollups
    const second = metrics.render();
    await store.releaseUntil(Promise.all([first, second]));
    for (const text of await Promise.all([first, second])) {
      const families = parseExposition(text);
      expect([sampleValue(families, 'rows', { table: 'events' }), sampleValue(families, 'rows', { table: 'rollups' })]).toEqual([7, 3]);
    }
  });

  it('shows a counter read through the store at its value in each of two overlapping scrapes, not their sum', async () => {
    const metrics = new MetricsRegistry();
    const store = heldReads();
    metrics.collectedCounter('alerting', { name: 'evaluations_total', help: 'h', collect: async (set) => set({}, await store.read(5)) });
    const scrapes = Promise.all([metrics.render(), metrics.render()]);
    await store.releaseUntil(scrapes);
    expect((await scrapes).map((text) => sampleValue(parseExposition(text), 'evaluations_total'))).toEqual([5, 5]);
  });

  it('renders anew for a scrape that arrives once the one in flight has run for a while, after it and never beside it', async () => {
    let now = 0;
    const metrics = new MetricsRegistry({ now: () => now });
    const store = heldReads();
    let reads = 0;
    let running = 0;
    let mostAtOnce = 0;
    metrics.collectedGauge('store', {
      name: 'rows', help: 'h',
      collect: async (set) => {
        mostAtOnce = Math.max(mostAtOnce, ++running);
        set({}, await store.read(++reads));
        running--;
      },
    });
    const first = metrics.render();
    while (store.waiting() === 0) await nextTurn();
    now = 1001; // the first scrape has waited on the store for over a second
    const second = metrics.render();
    const third = metrics.render();
    await store.releaseUntil(Promise.all([first, second, third]));
    expect((await Promise.all([first, second, third])).map((text) => sampleValue(parseExposition(text), 'rows'))).toEqual([1, 2, 2]);
    expect(mostAtOnce).toBe(1);
  });
});

describe('GET /metrics', () => {
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise((r) => server?.close(r) ?? r(undefined));
    server = undefined;
  });

  async function serve(metrics: MetricsRegistry): Promise<string> {
    const app = express();
    app.route('/metrics').get(metrics.handler());
    server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  it('answers gzip to a client that accepts it (Prometheus always does) and the text to one that does not, HEAD alike', async () => {
    const metrics = new MetricsRegistry();
    metrics.collectedCounter('hooks', {
      name: 'hookwatch_hook_executions_total', help: 'h', labelNames: ['hook_name'],
      collect: (set) => {
        for (let i = 0; i < 2000; i++) set({ hook_name: `PreToolUse:hook-${i}` }, i);
      },
    });
    const base = await serve(metrics);
    const text = await metrics.render();

    const plain = await requestMetrics(base);
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers['vary']).toMatch(/accept-encoding/i);
    expect(plain.headers['content-type']).toBe(EXPOSITION_CONTENT_TYPE);
    expect(plain.body.toString('utf8')).toBe(text);

    const gzipped = await requestMetrics(base, { headers: { 'accept-encoding': 'gzip' } });
    expect(gzipped.status).toBe(200);
    expect(gzipped.headers['content-encoding']).toBe('gzip');
    expect(gzipped.headers['vary']).toMatch(/accept-encoding/i);
    expect(gzipped.headers['content-type']).toBe(EXPOSITION_CONTENT_TYPE);
    expect(Number(gzipped.headers['content-length'])).toBe(gzipped.body.length);
    expect(gzipped.body.length).toBeLessThan(plain.body.length / 5);
    const inflated = gunzipSync(gzipped.body).toString('utf8');
    expect(inflated).toBe(text);
    checkExposition(inflated);

    // What Prometheus sends, and refusals of gzip by weight.
    expect((await requestMetrics(base, { headers: { 'accept-encoding': 'gzip, deflate, br, zstd' } })).headers['content-encoding']).toBe('gzip');
    expect((await requestMetrics(base, { headers: { 'accept-encoding': 'gzip;q=0, identity' } })).headers['content-encoding']).toBeUndefined();
    expect((await requestMetrics(base, { headers: { 'accept-encoding': 'br' } })).body.toString('utf8')).toBe(text);

    for (const [get, headers] of [[gzipped, { 'accept-encoding': 'gzip' }], [plain, {}]] as const) {
      const head = await requestMetrics(base, { method: 'HEAD', headers });
      expect(head.body.length).toBe(0);
      for (const h of ['content-type', 'content-encoding', 'vary', 'content-length', 'cache-control']) expect(head.headers[h], h).toBe(get.headers[h]);
    }
  });
});

describe('MetricsRegistry failures', () => {
  it('keeps scraping when a collect throws or sets a bad value, leaving that metric empty and counting once per source per scrape', async () => {
    const { logger, warnings } = recordingLogger();
    const metrics = new MetricsRegistry({ logger });
    let broken = true;
    metrics.collectedGauge('good', { name: 'a', help: 'h', collect: (set) => set({}, 1) });
    metrics.collectedGauge('throws', {
      name: 'b', help: 'h', labelNames: ['x'],
      collect: (set) => {
        set({ x: '1' }, 1);
        if (broken) throw new Error('boom');
      },
    });
    metrics.collectedGauge('throws', {
      name: 'b2', help: 'h',
      collect: async () => {
        throw new Error('boom too');
      },
    });
    metrics.collectedCounter('invalid', { name: 'c_total', help: 'h', collect: (set) => set({}, 'seven' as unknown as number) });
    await metrics.render();
    const text = await metrics.render();
    checkExposition(text);
    const families = parseExposition(text);
    expect(sampleValue(families, 'a')).toBe(1);
    // The sample set before the throw is not shown: the metric is left out of that scrape.
    expect(families.get('b')?.samples).toEqual([]);
    expect(families.get('b2')?.samples).toEqual([]);
    expect(families.get('c_total')?.samples).toEqual([]);
    expect(sampleValue(families, 'hookwatch_metrics_collector_errors_total', { collector: 'throws' })).toBe(2);
    expect(sampleValue(families, 'hookwatch_metrics_collector_errors_total', { collector: 'invalid' })).toBe(2);
    expect(sampleValue(families, 'hookwatch_metrics_collector_errors_total', { collector: 'good' })).toBe(0);
    expect(warnings).toHaveLength(4);
    expect(warnings[0]).toMatchObject({ msg: 'metrics collector failed', collector: 'throws', metric: 'b' });

    broken = false;
    expect(sampleValue(parseExposition(await metrics.render()), 'b', { x: '1' })).toBe(1);
  });

  it('shows each source\'s error counter at 0 before it fails, so increase() sees the first failure', async () => {
    // A counter series that first appears with its first failure already counted has no earlier sample:
    // increase() and rate() over it would read 0, and one failure would never fire an alert.
    const metrics = new MetricsRegistry();
    let broken = false;
    metrics.collectedGauge('store', {
      name: 'g', help: 'h',
      collect: (set) => {
        if (broken) throw new Error('boom');
        set({}, 1);
      },
    });
    metrics.collectedCounter('otlp', { name: 'c_total', help: 'h', collect: (set) => set({}, 1) });
    const before = parseExposition(await metrics.render());
    expect(before.get('hookwatch_metrics_collector_errors_total')?.samples.map((x) => [x.labels['collector'], x.value]).sort()).toEqual([['otlp', 0], ['store', 0]]);
    broken = true;
    const after = parseExposition(await metrics.render());
    expect([sampleValue(after, 'hookwatch_metrics_collector_errors_total', { collector: 'store' }), sampleValue(after, 'hookwatch_metrics_collector_errors_total', { collector: 'otlp' })]).toEqual([1, 0]);
  });

  it('counts a failure once for two scrapes that overlap, and again in the next scrape', async () => {
    // The second scrape is answered with the first one's exposition: one collection failed, not two.
    const metrics = new MetricsRegistry();
    metrics.collectedGauge('slow', {
      name: 's', help: 'h',
      collect: async () => {
        await new Promise((r) => setTimeout(r, 20));
        throw new Error('store away');
      },
    });
    await Promise.all([metrics.render(), metrics.render()]);
    const text = await metrics.render();
    expect(sampleValue(parseExposition(text), 'hookwatch_metrics_collector_errors_total', { collector: 'slow' })).toBe(2);
    // So the counter counts renders, not scrapes, and its help says so.
    expect(text).toContain('# HELP hookwatch_metrics_collector_errors_total Renders of /metrics in which a metrics collector failed (its metrics were left out of that render; scrapes arriving together share one render).\n');
  });

  it('reads a perScrape source once per scrape, however many families use it', async () => {
    const metrics = new MetricsRegistry();
    let reads = 0;
    const status = metrics.perScrape(() => ({ depth: ++reads }));
    metrics.collectedGauge('forward', { name: 'depth', help: 'h', collect: (set) => set({}, status().depth) });
    metrics.collectedGauge('forward', { name: 'depth_again', help: 'h', collect: (set) => set({}, status().depth) });
    const families = parseExposition(await metrics.render());
    expect([sampleValue(families, 'depth'), sampleValue(families, 'depth_again'), reads]).toEqual([1, 1, 1]);
    await metrics.render();
    expect(reads).toBe(2);
  });
});

describe('checkExposition', () => {
  it.runIf(hasPromtool)('rejects what Prometheus would not parse', () => {
    expect(() => checkExposition('a{x="1} 1\n')).toThrow(/promtool/);
    expect(() => checkExposition('# TYPE a counter\n# TYPE a gauge\na 1\n')).toThrow(/promtool/);
  });
});
