/**
 * hookwatch's own metrics, served at GET /metrics in the Prometheus text exposition format (version 0.0.4) by
 * prom-client. This module knows no stage: each stage registers its metrics on the MetricsRegistry that
 * service.ts hands it (receiver/metrics.ts, pipeline/metrics.ts, ...). Most values are kept by the stages as
 * plain numbers and read at scrape time through prom-client's collect() callbacks, so nothing is computed
 * between scrapes. A callback that throws must not fail the whole scrape: its metric is left without samples
 * for that render, and hookwatch_metrics_collector_errors_total counts it once per render, however many scrapes
 * share it (each source's series is there at 0 from its registration, so increase() sees a source's first failure).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { Request, Response } from 'express';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { pauseEvery } from '../paced.ts';
import type { Logger } from './logger.ts';

const gzipAsync = promisify(gzip);

/** The Content-Type of the text exposition format. */
export const EXPOSITION_CONTENT_TYPE: string = Registry.PROMETHEUS_CONTENT_TYPE;

/** Default latency buckets (seconds) for store operations: SQLite commits take ~1 ms, a slow disk 100s of ms. */
export const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

/** Sets one sample of a collected metric; labels are `{}` for a metric without labels. */
export type SetSample<L extends string> = (labels: Readonly<Record<L, string>>, value: number) => void;

/** A metric whose values a stage keeps and /metrics reads when scraped. */
export interface CollectedMetric<L extends string> {
  name: string;
  help: string;
  labelNames?: readonly L[];
  /** Sets the current samples; a sample not set is absent from this scrape (unknown is not zero). */
  collect(set: SetSample<L>): void | Promise<void>;
}

/** A metric the stage updates itself (prom-client's own counter, gauge or histogram). */
export interface MetricDefinition<L extends string> {
  name: string;
  help: string;
  labelNames?: readonly L[];
}

/**
 * How long after a render began a scrape arriving may still be answered with it. The collect callbacks set and
 * clear their metric's values in one registry, so two renders at once would mix them up: a render started while
 * one waits on the store clears the samples that one has set, and a counter's value is added twice.
 */
const SHARE_RENDER_MS = 1000;

/** How long a render writes families before it lets the event loop serve other work (see renderOnce). */
const RENDER_SLICE_MS = 10;

/** One render of the exposition, shared by the scrapes that arrive while it waits to begin or soon after. */
interface Render {
  body: Promise<string>;
  /** When it began (now()), undefined while it waits for the one before it to end. */
  startedAt: number | undefined;
  done: boolean;
}

interface Scrape {
  /** The sources whose collect failed. */
  failed: Set<string>;
  /** perScrape's values, by reader. */
  memo: Map<() => unknown, unknown>;
}

/** The registry of one hookwatch process. */
export class MetricsRegistry {
  private readonly registry = new Registry();
  /** Rendered after the stages' metrics, so a failure counts in the scrape it happened in. */
  private readonly own = new Registry();
  private readonly collectorErrors: Counter<'collector'>;
  /** The scrape being rendered. */
  private readonly scrape = new AsyncLocalStorage<Scrape>();
  /** The latest render asked for: running, waiting for the one before it, or done. */
  private latest: Render | undefined;
  private readonly logger: Logger | undefined;
  private readonly now: () => number;

  private readonly sliceMs: number;

  /** `sliceMs`: how long a render runs before it gives the event loop a turn (RENDER_SLICE_MS). */
  constructor(opts: { logger?: Logger; now?: () => number; sliceMs?: number } = {}) {
    this.logger = opts.logger;
    this.now = opts.now ?? performance.now.bind(performance);
    this.sliceMs = opts.sliceMs ?? RENDER_SLICE_MS;
    this.collectorErrors = new Counter({
      name: 'hookwatch_metrics_collector_errors_total',
      help: 'Renders of /metrics in which a metrics collector failed (its metrics were left out of that render; scrapes arriving together share one render).',
      labelNames: ['collector'],
      registers: [this.own],
    });
  }

  /** A counter the stage increments (`name` ends in `_total`, the text format's convention). */
  counter<L extends string = never>(def: MetricDefinition<L>): Counter<L> {
    checkCounterName(def.name);
    return new Counter<L>({ name: def.name, help: def.help, labelNames: [...(def.labelNames ?? [])], registers: [this.registry] });
  }

  /** A gauge the stage sets. */
  gauge<L extends string = never>(def: MetricDefinition<L>): Gauge<L> {
    return new Gauge<L>({ name: def.name, help: def.help, labelNames: [...(def.labelNames ?? [])], registers: [this.registry] });
  }

  /** A histogram the stage observes into; the label values must be a bounded set. */
  histogram<L extends string = never>(def: MetricDefinition<L> & { buckets?: readonly number[] }): Histogram<L> {
    return new Histogram<L>({ name: def.name, help: def.help, labelNames: [...(def.labelNames ?? [])], buckets: [...(def.buckets ?? LATENCY_BUCKETS)], registers: [this.registry] });
  }

  /** A counter read from the stage when scraped; `source` names the stage in hookwatch_metrics_collector_errors_total. */
  collectedCounter<L extends string = never>(source: string, def: CollectedMetric<L>): void {
    checkCounterName(def.name);
    this.collectorErrors.inc({ collector: source }, 0);
    const guard = this.guard.bind(this);
    new Counter<L>({
      name: def.name, help: def.help, labelNames: [...(def.labelNames ?? [])], registers: [this.registry],
      collect() {
        return guard(this, source, def, (labels, value) => this.inc(labels as Partial<Record<L, string>>, value));
      },
    });
  }

  /** A gauge read from the stage when scraped. */
  collectedGauge<L extends string = never>(source: string, def: CollectedMetric<L>): void {
    this.collectorErrors.inc({ collector: source }, 0);
    const guard = this.guard.bind(this);
    new Gauge<L>({
      name: def.name, help: def.help, labelNames: [...(def.labelNames ?? [])], registers: [this.registry],
      collect() {
        return guard(this, source, def, (labels, value) => this.set(labels as Partial<Record<L, string>>, value));
      },
    });
  }

  /**
   * `read`, called at most once per scrape: several families read from one snapshot of a stage (one status
   * query for the ten forwarding families), and all of them show the same moment.
   */
  perScrape<T>(read: () => T): () => T {
    return () => {
      const memo = this.scrape.getStore()?.memo;
      if (!memo) return read();
      if (!memo.has(read)) memo.set(read, read());
      return memo.get(read) as T;
    };
  }

  /**
   * The exposition text for a scrape. One render runs at a time (the two servers of a Prometheus HA pair scrape
   * each target, at times together): a scrape arriving while one runs gets that one's text if it began less
   * than SHARE_RENDER_MS ago, so no value is older than that when the scrape arrives; otherwise it waits for
   * that one to end and gets the next render, which the scrapes arriving in the meantime share.
   */
  render(): Promise<string> {
    const latest = this.latest;
    const running = latest !== undefined && !latest.done;
    if (running && (latest.startedAt === undefined || this.now() - latest.startedAt < SHARE_RENDER_MS)) return latest.body;
    const next = { startedAt: undefined, done: false } as Render;
    next.body = (running ? latest.body.then(noop, noop) : Promise.resolve()).then(() => {
      next.startedAt = this.now();
      return this.renderOnce();
    });
    const end = (): void => {
      next.done = true;
    };
    next.body.then(end, end);
    this.latest = next;
    return next.body;
  }

  /**
   * One render, a family at a time, with a turn of the event loop between two once it has run sliceMs. prom-client
   * writes a family in one go, and the per-hook families of thousands of hooks take it hundreds of milliseconds
   * together: OTLP requests and probes wait for a slice (or one family) at most, not the whole scrape. A turn
   * before every family would make each scrape wait for as many turns as there are families, each behind the
   * slices of a large OTLP batch being committed: the few milliseconds of a small exposition run in one go. A
   * stage whose families must show one moment reads them through perScrape.
   */
  private async renderOnce(): Promise<string> {
    const scrape: Scrape = { failed: new Set(), memo: new Map() };
    const pause = pauseEvery(this.sliceMs);
    const body = await this.scrape.run(scrape, async () => {
      const families: string[] = [];
      for (const metric of this.registry.getMetricsAsArray()) {
        await pause();
        families.push(await this.registry.getSingleMetricAsString(metric.name));
      }
      return families.join('\n\n') + '\n';
    });
    for (const collector of scrape.failed) this.collectorErrors.inc({ collector });
    return body + '\n' + (await this.own.metrics());
  }

  /**
   * Express handler for GET (and HEAD) /metrics: gzip to a client that accepts it, as Prometheus always does (the
   * text takes some 1.2 KB per hook with its own series, megabytes with a high metrics.maxHookSeries), compressed
   * on libuv's thread pool rather than on the event loop; the text otherwise. HEAD answers GET's headers,
   * Content-Length too.
   */
  handler(): (req: Request, res: Response) => Promise<void> {
    return async (req, res) => {
      const text = await this.render();
      const gzipped = req.acceptsEncodings('gzip', 'identity') === 'gzip';
      const body = gzipped ? await gzipAsync(text) : Buffer.from(text);
      res.setHeader('content-type', EXPOSITION_CONTENT_TYPE);
      res.setHeader('cache-control', 'no-store');
      res.vary('Accept-Encoding');
      if (gzipped) res.setHeader('content-encoding', 'gzip');
      res.setHeader('content-length', body.length);
      res.end(body);
    };
  }

  /** Runs one collect callback on a cleared metric; a throw leaves the metric empty and is counted once per scrape. */
  private async guard<L extends string>(metric: Counter<L> | Gauge<L>, source: string, def: CollectedMetric<L>, set: SetSample<L>): Promise<void> {
    clear(metric, def);
    try {
      await def.collect(set);
    } catch (err) {
      clear(metric, def);
      const failed = this.scrape.getStore()?.failed;
      if (failed?.has(source)) return;
      failed?.add(source);
      this.logger?.warn('metrics collector failed', { collector: source, metric: def.name, err });
    }
  }
}

/** No samples at all: reset() alone leaves a 0 in a metric without labels, and unknown is not zero. */
function clear<L extends string>(metric: Counter<L> | Gauge<L>, def: CollectedMetric<L>): void {
  metric.reset();
  if (!def.labelNames?.length) metric.remove({});
}

function noop(): void {}

function checkCounterName(name: string): void {
  if (!name.endsWith('_total')) throw new Error(`counter ${name} must end in _total`);
}
