/**
 * hookwatch's own metrics in the Prometheus text exposition format (version 0.0.4), served at GET /metrics.
 * A registry holds a list of collectors (callbacks that read counters the stages already keep), so a stage
 * registers its metrics with one line and nothing is computed between scrapes. Written by hand: the format
 * is small, and a collector that throws must not fail the whole scrape.
 */
import type { Request, Response } from 'express';
import type { Logger } from './logger.ts';

/** The metric types hookwatch exposes. */
export type MetricType = 'counter' | 'gauge' | 'histogram';

/** One line of a family: `name{labels} value`. `suffix` is appended to the family name (histograms). */
export interface Sample {
  suffix?: '_bucket' | '_sum' | '_count';
  labels?: Readonly<Record<string, string>>;
  value: number;
}

/** A metric family: counters are named with `_total` (the text format's convention). */
export interface MetricFamily {
  name: string;
  help: string;
  type: MetricType;
  samples: Sample[];
}

/** Reads the current values when /metrics is scraped. */
export type MetricsCollector = () => MetricFamily[] | Promise<MetricFamily[]>;

/** The Content-Type of the text exposition format. */
export const EXPOSITION_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

function escapeHelp(s: string): string {
  return s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

/** Label values come from clients (hook names): escape, never trust. */
export function escapeLabelValue(s: string): string {
  return s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

/** Go's ParseFloat spellings the Prometheus parser accepts. */
export function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

function formatLabels(labels: Readonly<Record<string, string>> | undefined): string {
  if (!labels) return '';
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabelValue(v)}"`);
  return parts.length ? `{${parts.join(',')}}` : '';
}

/** Throws naming the family when a name, label or value could not be parsed by Prometheus. */
export function validateFamily(f: MetricFamily): void {
  if (!METRIC_NAME.test(f.name)) throw new Error(`invalid metric name ${JSON.stringify(f.name)}`);
  if (f.type === 'counter' && !f.name.endsWith('_total')) throw new Error(`counter ${f.name} must end in _total`);
  for (const s of f.samples) {
    if (s.suffix && f.type !== 'histogram') throw new Error(`${f.name}: only histograms have ${s.suffix} samples`);
    if (typeof s.value !== 'number') throw new Error(`${f.name}: sample value is not a number`);
    for (const k of Object.keys(s.labels ?? {})) {
      if (!LABEL_NAME.test(k) || k.startsWith('__')) throw new Error(`${f.name}: invalid label name ${JSON.stringify(k)}`);
    }
  }
}

/** Renders families as exposition text (one HELP and TYPE per family, then its samples). */
export function renderExposition(families: readonly MetricFamily[]): string {
  const lines: string[] = [];
  for (const f of families) {
    lines.push(`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`);
    for (const s of f.samples) lines.push(`${f.name}${s.suffix ?? ''}${formatLabels(s.labels)} ${formatValue(s.value)}`);
  }
  return lines.length ? lines.join('\n') + '\n' : '';
}

/** Collects from every registered collector and renders one valid exposition. */
export class MetricsRegistry {
  private readonly collectors: { name: string; collect: MetricsCollector }[] = [];
  private readonly failures = new Map<string, number>();
  private readonly logger: Logger | undefined;

  constructor(opts: { logger?: Logger } = {}) {
    this.logger = opts.logger;
  }

  /** Adds a collector; `name` labels its failures in hookwatch_metrics_collector_errors_total. */
  register(name: string, collect: MetricsCollector): void {
    this.collectors.push({ name, collect });
  }

  /** All families, merged by name; a collector that throws or returns an invalid family is skipped and counted. */
  async collect(): Promise<MetricFamily[]> {
    const byName = new Map<string, MetricFamily>();
    for (const c of this.collectors) {
      let families: MetricFamily[];
      try {
        families = await c.collect();
        for (const f of families) {
          validateFamily(f);
          const seen = byName.get(f.name);
          if (seen && seen.type !== f.type) throw new Error(`${f.name} is already a ${seen.type}`);
        }
      } catch (err) {
        this.fail(c.name, err);
        continue;
      }
      for (const f of families) {
        const seen = byName.get(f.name);
        if (seen) seen.samples.push(...f.samples);
        else byName.set(f.name, { ...f, samples: [...f.samples] });
      }
    }
    byName.set('hookwatch_metrics_collector_errors_total', {
      name: 'hookwatch_metrics_collector_errors_total',
      help: 'Scrapes in which a metrics collector failed (its metrics were left out of that scrape).',
      type: 'counter',
      samples: [...this.failures].map(([collector, value]) => ({ labels: { collector }, value })),
    });
    return [...byName.values()];
  }

  /** The exposition text for one scrape. */
  async render(): Promise<string> {
    return renderExposition(await this.collect());
  }

  /** Express handler for GET /metrics. */
  handler(): (req: Request, res: Response) => Promise<void> {
    return async (_req, res) => {
      const body = await this.render();
      res.setHeader('content-type', EXPOSITION_CONTENT_TYPE);
      res.setHeader('cache-control', 'no-store');
      res.end(body);
    };
  }

  private fail(name: string, err: unknown): void {
    this.failures.set(name, (this.failures.get(name) ?? 0) + 1);
    this.logger?.warn('metrics collector failed', { collector: name, err });
  }
}

/** Default latency buckets (seconds) for store operations: SQLite commits take ~1 ms, a slow disk 100s of ms. */
export const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

/** A histogram with one label (e.g. the store operation); the label's values must be a bounded set. */
export class Histogram {
  private readonly series = new Map<string, { buckets: number[]; sum: number; count: number }>();
  private readonly bounds: readonly number[];
  private readonly name: string;
  private readonly help: string;
  private readonly label: string;

  constructor(opts: { name: string; help: string; label: string; buckets?: readonly number[] }) {
    this.name = opts.name;
    this.help = opts.help;
    this.label = opts.label;
    this.bounds = opts.buckets ?? LATENCY_BUCKETS;
  }

  /** Records one observation. */
  observe(labelValue: string, value: number): void {
    let s = this.series.get(labelValue);
    if (!s) {
      s = { buckets: this.bounds.map(() => 0), sum: 0, count: 0 };
      this.series.set(labelValue, s);
    }
    for (let i = 0; i < this.bounds.length; i++) if (value <= (this.bounds[i] as number)) s.buckets[i] = (s.buckets[i] as number) + 1;
    s.sum += value;
    s.count++;
  }

  /** The family with cumulative buckets, +Inf, _sum and _count per label value. */
  family(): MetricFamily {
    const samples: Sample[] = [];
    for (const [v, s] of this.series) {
      this.bounds.forEach((le, i) => samples.push({ suffix: '_bucket', labels: { [this.label]: v, le: formatValue(le) }, value: s.buckets[i] as number }));
      samples.push({ suffix: '_bucket', labels: { [this.label]: v, le: '+Inf' }, value: s.count });
      samples.push({ suffix: '_sum', labels: { [this.label]: v }, value: s.sum });
      samples.push({ suffix: '_count', labels: { [this.label]: v }, value: s.count });
    }
    return { name: this.name, help: this.help, type: 'histogram', samples };
  }
}
