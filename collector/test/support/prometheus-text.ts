/**
 * Reading GET /metrics in tests. Whether the text is valid is decided by Prometheus's own parser and linter
 * (`checkExposition`: promtool check metrics); `parseExposition` only splits what prom-client wrote into
 * families and samples so a test can look values up (label values unescaped, histogram `_bucket`, `_sum` and
 * `_count` samples under their family).
 */
import { spawnSync } from 'node:child_process';
import { request, type IncomingHttpHeaders } from 'node:http';
import { EXPOSITION_CONTENT_TYPE } from '../../src/telemetry/metrics.ts';
import { requireTool, runs } from '../required-tool.ts';

/** One sample line. */
export interface ParsedSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** One family, with its samples. */
export interface ParsedFamily {
  name: string;
  type: string;
  help: string | undefined;
  samples: ParsedSample[];
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
const HISTOGRAM_SUFFIX = /_(bucket|sum|count)$/;

/** Whether promtool runs here; under CI=true a missing promtool fails the test file. */
export const hasPromtool = requireTool(runs('promtool', ['--version']), 'promtool', 'apt-get install prometheus');

/** Throws with promtool's findings when Prometheus would reject or lint the exposition (a no-op without promtool outside CI). */
export function checkExposition(text: string): void {
  if (!hasPromtool) return;
  const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 30_000 });
  if (r.status !== 0 || r.stdout + r.stderr !== '') throw new Error(`promtool check metrics (exit ${r.status}):\n${r.stdout}${r.stderr}`);
}

/**
 * GET /metrics of the HTTP port at `base` (with `headers`), as Prometheus scrapes it: answered 200 in the
 * exposition's content type, and valid (checkExposition). Its text, and its families (parseExposition).
 */
export async function scrapeMetrics(base: string, headers: Record<string, string> = {}): Promise<{ text: string; families: Map<string, ParsedFamily> }> {
  const res = await fetch(`${base}/metrics`, { headers });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}: ${text.slice(0, 200)}`);
  const type = res.headers.get('content-type');
  if (type !== EXPOSITION_CONTENT_TYPE) throw new Error(`GET /metrics answered in ${type}, not ${EXPOSITION_CONTENT_TYPE}`);
  checkExposition(text);
  return { text, families: parseExposition(text) };
}

function unescape(value: string): string {
  return value.replace(/\\(.)/g, (_m, c: string) => (c === 'n' ? '\n' : c));
}

/** Families by name, in the order written. */
export function parseExposition(text: string): Map<string, ParsedFamily> {
  const families = new Map<string, ParsedFamily>();
  const family = (name: string): ParsedFamily => {
    let f = families.get(name);
    if (!f) families.set(name, (f = { name, type: 'untyped', help: undefined, samples: [] }));
    return f;
  };
  for (const line of text.split('\n')) {
    const meta = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
    if (meta) {
      const f = family(meta[2] as string);
      if (meta[1] === 'TYPE') f.type = meta[3] as string;
      else f.help = (meta[3] as string).replace(/\\(\\|n)/g, (_m, c: string) => (c === 'n' ? '\n' : '\\'));
      continue;
    }
    if (line === '' || line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`not a sample line: ${JSON.stringify(line)}`);
    const [, name = '', labelText = '', value = ''] = m;
    const labels: Record<string, string> = {};
    for (const [, k = '', v = ''] of labelText.matchAll(LABEL)) labels[k] = unescape(v);
    const base = name.replace(HISTOGRAM_SUFFIX, '');
    const owner = base !== name && families.get(base)?.type === 'histogram' ? base : name;
    family(owner).samples.push({ name, labels, value: Number(value.replace(/^([+-]?)Inf$/, '$1Infinity')) });
  }
  return families;
}

/** The value of the first series with these labels, or undefined when absent. */
export function sampleValue(families: Map<string, ParsedFamily>, family: string, labels: Record<string, string> = {}, sampleName = family): number | undefined {
  const f = families.get(family);
  const want = Object.entries(labels);
  return f?.samples.find((s) => s.name === sampleName && want.every(([k, v]) => s.labels[k] === v))?.value;
}

/** One answer of GET or HEAD /metrics, as sent: headers and body bytes, nothing decoded. */
export interface RawMetricsAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/**
 * GET (or HEAD) /metrics of the HTTP port at `base` through node:http, which (unlike fetch) asks for no
 * Content-Encoding unless `headers` do and decompresses nothing.
 */
export function requestMetrics(base: string, opts: { method?: 'GET' | 'HEAD'; headers?: Record<string, string> } = {}): Promise<RawMetricsAnswer> {
  return new Promise((resolve, reject) => {
    request(new URL('/metrics', base), { method: opts.method ?? 'GET', headers: opts.headers ?? {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    }).on('error', reject).end();
  });
}
