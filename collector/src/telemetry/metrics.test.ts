/** The exposition writer, the registry's failure handling and the strict parser the other tests rely on. */
import { spawnSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Histogram, MetricsRegistry, renderExposition, validateFamily, type MetricFamily } from './metrics.ts';
import { ExpositionError, parseExposition, sampleValue } from '../../test/support/prometheus-text.ts';

const promtool = spawnSync('promtool', ['--version'], { encoding: 'utf8' }).status === 0;

describe('renderExposition', () => {
  it('round-trips any label value (hook names come from clients) through the strict parser', () => {
    fc.assert(fc.property(fc.string({ unit: 'grapheme', maxLength: 40 }), fc.nat(), (hookName, value) => {
      const text = renderExposition([{ name: 'x_total', help: 'h', type: 'counter', samples: [{ labels: { hook_name: hookName }, value }] }]);
      expect(sampleValue(parseExposition(text), 'x_total', { hook_name: hookName })).toBe(value);
    }), { numRuns: 300 });
  });

  it('escapes quotes, backslashes and newlines the way Prometheus reads them', () => {
    const nasty = 'PreToolUse:Bash|"x"\\y\nz';
    const text = renderExposition([{ name: 'hookwatch_x_total', help: 'multi\nline \\ help', type: 'counter', samples: [{ labels: { hook_name: nasty }, value: 3 }] }]);
    expect(text).toBe('# HELP hookwatch_x_total multi\\nline \\\\ help\n# TYPE hookwatch_x_total counter\nhookwatch_x_total{hook_name="PreToolUse:Bash|\\"x\\"\\\\y\\nz"} 3\n');
    if (promtool) expect(spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' }).status).toBe(0);
  });

  it('writes special floats in Go spelling', () => {
    const text = renderExposition([{ name: 'g', help: 'h', type: 'gauge', samples: [{ labels: { a: '1' }, value: NaN }, { labels: { a: '2' }, value: Infinity }, { labels: { a: '3' }, value: -Infinity }, { labels: { a: '4' }, value: 0.25 }] }]);
    expect(text).toContain('g{a="1"} NaN\ng{a="2"} +Inf\ng{a="3"} -Inf\ng{a="4"} 0.25\n');
  });

  it('refuses names Prometheus would not parse', () => {
    expect(() => validateFamily({ name: 'bad-name', help: '', type: 'gauge', samples: [] })).toThrow(/invalid metric name/);
    expect(() => validateFamily({ name: 'c', help: '', type: 'counter', samples: [] })).toThrow(/_total/);
    expect(() => validateFamily({ name: 'g', help: '', type: 'gauge', samples: [{ labels: { 'a-b': 'x' }, value: 1 }] })).toThrow(/label name/);
    expect(() => validateFamily({ name: 'g', help: '', type: 'gauge', samples: [{ labels: { __name: 'x' }, value: 1 }] })).toThrow(/label name/);
  });
});

describe('Histogram', () => {
  it('has cumulative buckets, +Inf equal to _count, and a _sum', () => {
    const h = new Histogram({ name: 'op_seconds', help: 'h', label: 'operation', buckets: [0.01, 0.1, 1] });
    for (const v of [0.005, 0.05, 0.05, 0.5, 5]) h.observe('ingest', v);
    const families = parseExposition(renderExposition([h.family()]));
    const bucket = (le: string): number | undefined => sampleValue(families, 'op_seconds', { operation: 'ingest', le }, 'op_seconds_bucket');
    expect([bucket('0.01'), bucket('0.1'), bucket('1'), bucket('+Inf')]).toEqual([1, 3, 4, 5]);
    expect(sampleValue(families, 'op_seconds', { operation: 'ingest' }, 'op_seconds_count')).toBe(5);
    expect(sampleValue(families, 'op_seconds', { operation: 'ingest' }, 'op_seconds_sum')).toBeCloseTo(5.605);
  });
});

describe('MetricsRegistry', () => {
  const family = (name: string, value: number, type: MetricFamily['type'] = 'gauge'): MetricFamily => ({ name, help: 'h', type, samples: [{ value }] });

  it('keeps scraping when a collector throws or returns a bad family, and counts each failure', async () => {
    const warnings: string[] = [];
    const registry = new MetricsRegistry({ logger: { debug() {}, info() {}, warn: (m) => warnings.push(m), error() {} } });
    registry.register('good', () => [family('a', 1)]);
    registry.register('throws', () => {
      throw new Error('boom');
    });
    registry.register('invalid', async () => [family('not a name', 1)]);
    registry.register('conflict', () => [family('a', 2, 'histogram')]);
    await registry.render();
    const families = parseExposition(await registry.render());
    expect(sampleValue(families, 'a')).toBe(1);
    expect(sampleValue(families, 'hookwatch_metrics_collector_errors_total', { collector: 'throws' })).toBe(2);
    expect(sampleValue(families, 'hookwatch_metrics_collector_errors_total', { collector: 'invalid' })).toBe(2);
    expect(sampleValue(families, 'hookwatch_metrics_collector_errors_total', { collector: 'conflict' })).toBe(2);
    expect(warnings).toHaveLength(6);
  });

  it('merges families of the same name and type from two collectors into one block', async () => {
    const registry = new MetricsRegistry();
    registry.register('one', () => [{ name: 'q_total', help: 'h', type: 'counter', samples: [{ labels: { destination: 'a' }, value: 1 }] }]);
    registry.register('two', () => [{ name: 'q_total', help: 'h', type: 'counter', samples: [{ labels: { destination: 'b' }, value: 2 }] }]);
    const families = parseExposition(await registry.render());
    expect(families.get('q_total')?.samples.map((s) => s.value)).toEqual([1, 2]);
  });
});

describe('parseExposition (strict)', () => {
  const bad: [string, string][] = [
    ['no trailing newline', 'a 1'],
    ['unterminated label value', 'a{x="1} 1\n'],
    ['bad escape', 'a{x="\\t"} 1\n'],
    ['not a number', 'a one\n'],
    ['family split in two places', 'a 1\nb 1\na{x="y"} 2\n'],
    ['duplicate series', 'a{x="1"} 1\na{x="1"} 2\n'],
    ['TYPE after samples', 'a 1\n# TYPE a gauge\n'],
    ['negative counter', '# TYPE a_total counter\na_total -1\n'],
    ['non-cumulative histogram', '# TYPE h histogram\nh_bucket{le="1"} 5\nh_bucket{le="+Inf"} 3\nh_count 3\nh_sum 1\n'],
    ['histogram without +Inf', '# TYPE h histogram\nh_bucket{le="1"} 5\nh_count 5\nh_sum 1\n'],
  ];
  for (const [why, text] of bad) {
    it(`rejects: ${why}`, () => {
      expect(() => parseExposition(text)).toThrow(ExpositionError);
    });
  }

  it('accepts comments, timestamps and escaped label values', () => {
    const families = parseExposition('# a comment\n# HELP a help\n# TYPE a gauge\na{x="q\\"\\\\\\n"} 1.5e3 1700000000000\n');
    expect(sampleValue(families, 'a', { x: 'q"\\\n' })).toBe(1500);
  });
});
