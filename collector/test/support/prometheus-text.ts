/**
 * A strict parser of the Prometheus text exposition format 0.0.4 (the rules of Prometheus's expfmt text
 * parser): tests read /metrics with it, and a scrape that Prometheus would reject fails here too.
 * Checks: HELP/TYPE before samples and at most once per family, a family's lines together, metric and label
 * names, label value escapes, Go float spellings, no duplicate series, histogram buckets cumulative with
 * `+Inf` equal to `_count`.
 */

/** One parsed sample line. */
export interface ParsedSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** One parsed family, with its samples (histogram `_bucket`, `_sum`, `_count` included). */
export interface ParsedFamily {
  name: string;
  type: string;
  help: string | undefined;
  samples: ParsedSample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);
const FLOAT = /^[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|Inf|inf|NaN)$/;

/** Thrown with the 1-based line number. */
export class ExpositionError extends Error {
  override name = 'ExpositionError';
}

function parseFloatStrict(text: string, where: string): number {
  if (!FLOAT.test(text)) throw new ExpositionError(`${where}: ${JSON.stringify(text)} is not a number`);
  if (/^[+]?Inf$/i.test(text)) return Infinity;
  if (/^-Inf$/i.test(text)) return -Infinity;
  return Number(text);
}

function familyOf(sampleName: string, families: Map<string, ParsedFamily>): string {
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (sampleName.endsWith(suffix)) {
      const base = sampleName.slice(0, -suffix.length);
      const f = families.get(base);
      if (f && (f.type === 'histogram' || f.type === 'summary')) return base;
    }
  }
  return sampleName;
}

function parseLabels(text: string, where: string): { labels: Record<string, string>; rest: string } {
  const labels: Record<string, string> = {};
  let s = text.slice(1);
  for (;;) {
    s = s.trimStart();
    if (s.startsWith('}')) return { labels, rest: s.slice(1) };
    const name = LABEL_NAME.exec(s)?.[0];
    if (!name) throw new ExpositionError(`${where}: bad label name at ${JSON.stringify(s.slice(0, 20))}`);
    if (name in labels) throw new ExpositionError(`${where}: label ${name} given twice`);
    s = s.slice(name.length).trimStart();
    if (!s.startsWith('="')) throw new ExpositionError(`${where}: expected =" after label ${name}`);
    s = s.slice(2);
    let value = '';
    for (;;) {
      const c = s[0];
      if (c === undefined || c === '\n') throw new ExpositionError(`${where}: unterminated value of label ${name}`);
      if (c === '"') {
        s = s.slice(1);
        break;
      }
      if (c === '\\') {
        const e = s[1];
        if (e === '\\') value += '\\';
        else if (e === '"') value += '"';
        else if (e === 'n') value += '\n';
        else throw new ExpositionError(`${where}: bad escape \\${e ?? ''} in label ${name}`);
        s = s.slice(2);
        continue;
      }
      value += c;
      s = s.slice(1);
    }
    labels[name] = value;
    s = s.trimStart();
    if (s.startsWith(',')) s = s.slice(1);
    else if (!s.startsWith('}')) throw new ExpositionError(`${where}: expected , or } after label ${name}`);
  }
}

function checkHistogram(f: ParsedFamily): void {
  const groups = new Map<string, { buckets: [number, number][]; count?: number; sum?: boolean }>();
  for (const s of f.samples) {
    const { le, ...rest } = s.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    const g = groups.get(key) ?? { buckets: [] };
    groups.set(key, g);
    if (s.name === `${f.name}_bucket`) {
      if (le === undefined) throw new ExpositionError(`${f.name}: bucket without le`);
      g.buckets.push([parseFloatStrict(le, `${f.name} le`), s.value]);
    } else if (s.name === `${f.name}_count`) g.count = s.value;
    else if (s.name === `${f.name}_sum`) g.sum = true;
    else throw new ExpositionError(`${f.name}: unexpected sample ${s.name} in a histogram`);
  }
  for (const [key, g] of groups) {
    const sorted = [...g.buckets].sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < sorted.length; i++) {
      if ((sorted[i] as [number, number])[1] < (sorted[i - 1] as [number, number])[1]) throw new ExpositionError(`${f.name}${key}: buckets are not cumulative`);
    }
    const inf = sorted[sorted.length - 1];
    if (!inf || inf[0] !== Infinity) throw new ExpositionError(`${f.name}${key}: no +Inf bucket`);
    if (g.count !== undefined && g.count !== inf[1]) throw new ExpositionError(`${f.name}${key}: _count ${g.count} differs from the +Inf bucket ${inf[1]}`);
  }
}

/** Parses a whole exposition; throws ExpositionError naming the line on the first problem. */
export function parseExposition(text: string): Map<string, ParsedFamily> {
  const families = new Map<string, ParsedFamily>();
  const closed = new Set<string>();
  const seriesSeen = new Set<string>();
  let current: string | undefined;
  const enter = (name: string, where: string): ParsedFamily => {
    if (current !== name) {
      if (current !== undefined) closed.add(current);
      if (closed.has(name)) throw new ExpositionError(`${where}: family ${name} appears in two places`);
      current = name;
    }
    let f = families.get(name);
    if (!f) {
      f = { name, type: 'untyped', help: undefined, samples: [] };
      families.set(name, f);
    }
    return f;
  };
  if (text.length > 0 && !text.endsWith('\n')) throw new ExpositionError('the exposition must end with a newline');
  const lines = text.split('\n');
  lines.pop();
  lines.forEach((line, i) => {
    const where = `line ${i + 1}`;
    if (line.trim() === '') return;
    if (line.startsWith('#')) {
      const m = /^#\s+(HELP|TYPE)\s+(\S+)(?:\s(.*))?$/.exec(line);
      if (!m) return; // Plain comments are allowed.
      const [, kind, name = '', rest = ''] = m;
      if (!METRIC_NAME.test(name) || METRIC_NAME.exec(name)?.[0] !== name) throw new ExpositionError(`${where}: bad metric name ${JSON.stringify(name)}`);
      const f = enter(name, where);
      if (kind === 'TYPE') {
        if (f.samples.length) throw new ExpositionError(`${where}: TYPE of ${name} after its samples`);
        if (f.type !== 'untyped' || !TYPES.has(rest.trim())) throw new ExpositionError(`${where}: bad or second TYPE for ${name}`);
        f.type = rest.trim();
      } else {
        if (f.help !== undefined) throw new ExpositionError(`${where}: second HELP for ${name}`);
        f.help = rest.replace(/\\n/g, '\n').replace(/\\\\/g, '\\');
      }
      return;
    }
    const name = METRIC_NAME.exec(line)?.[0];
    if (!name) throw new ExpositionError(`${where}: a sample must start with a metric name`);
    let rest = line.slice(name.length);
    let labels: Record<string, string> = {};
    if (rest.startsWith('{')) ({ labels, rest } = parseLabels(rest, where));
    const parts = rest.trim().split(/\s+/);
    if (!/^\s/.test(rest) || parts.length < 1 || parts.length > 2) throw new ExpositionError(`${where}: expected "name{labels} value [timestamp]"`);
    const value = parseFloatStrict(parts[0] as string, where);
    if (parts[1] !== undefined && !/^-?\d+$/.test(parts[1])) throw new ExpositionError(`${where}: bad timestamp`);
    const f = enter(familyOf(name, families), where);
    if (f.type === 'counter' && (value < 0 || Number.isNaN(value))) throw new ExpositionError(`${where}: counter ${name} is negative or NaN`);
    const series = name + JSON.stringify(Object.entries(labels).sort());
    if (seriesSeen.has(series)) throw new ExpositionError(`${where}: duplicate series ${series}`);
    seriesSeen.add(series);
    f.samples.push({ name, labels, value });
  });
  for (const f of families.values()) if (f.type === 'histogram') checkHistogram(f);
  return families;
}

/** The value of one series, or undefined when absent. */
export function sampleValue(families: Map<string, ParsedFamily>, family: string, labels: Record<string, string> = {}, sampleName = family): number | undefined {
  const f = families.get(family);
  const want = Object.entries(labels);
  return f?.samples.find((s) => s.name === sampleName && want.every(([k, v]) => s.labels[k] === v))?.value;
}
