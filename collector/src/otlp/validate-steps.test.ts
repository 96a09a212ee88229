/**
 * A large metrics or traces request is checked in slices (validatePassThroughSteps): the protobuf skim pauses each
 * time the part of the body it walked since the last pause reaches SKIM_SLICE_BYTES, within one message larger
 * than a slice too, so the receivers can serve the event loop between slices. A request of an ordinary export is
 * one slice. Sliced or not, the skim accepts and refuses the same bodies, with the same message.
 */
import { describe, expect, it } from 'vitest';
import { MAX_REQUEST_BYTES, maxSizePassThrough } from '../../../bench/lib/batch.ts';
import { runSliced } from '../../test/support/steps.ts';
import { runToEnd } from '../paced.ts';
import { DecodeError, unbounded } from './model.ts';
import { lengthDelimited } from './proto-write.ts';
import { SKIM_SLICE_BYTES, skimOtlpProto, skimOtlpProtoSteps, type SkimProgress } from './skim-proto.ts';
import { validatePassThroughSteps } from './validate.ts';

/** The skim of `body` in slices, each slice's size as the bytes of the body it walked. */
function sliced(signal: 'metrics' | 'traces', body: Buffer): ReturnType<typeof runSliced<void>> {
  const progress: SkimProgress = { walked: 0 };
  return runSliced(skimOtlpProtoSteps(signal, body, progress), () => progress.walked);
}

/** Every slice but the last walks SKIM_SLICE_BYTES and less than a slice more (one message walked whole); the last no more. */
function expectSlicesBounded(r: { pauses: number; slices: number[] }, length: number): void {
  expect(r.slices.reduce((a, b) => a + b, 0)).toBe(length);
  expect(r.pauses).toBeGreaterThanOrEqual(Math.floor(length / (2 * SKIM_SLICE_BYTES)));
  for (const s of r.slices.slice(0, -1)) {
    expect(s).toBeGreaterThanOrEqual(SKIM_SLICE_BYTES);
    expect(s).toBeLessThan(2 * SKIM_SLICE_BYTES);
  }
  expect(r.slices.at(-1)).toBeLessThan(2 * SKIM_SLICE_BYTES);
}

/** The error `check` throws, or undefined. */
function thrown(check: () => void): unknown {
  try {
    check();
    return undefined;
  } catch (err) {
    return err;
  }
}

/** One metric whose gauge holds `n` number data points of one attribute each: a single message of many megabytes. */
function oneMetricOfPoints(n: number): Buffer {
  const point = lengthDelimited(1, lengthDelimited(7, Buffer.concat([lengthDelimited(1, Buffer.from('k')), lengthDelimited(2, lengthDelimited(1, Buffer.from('v')))])));
  const gauge = Buffer.alloc(n * point.length);
  for (let i = 0; i < n; i++) point.copy(gauge, i * point.length);
  // ExportMetricsServiceRequest.resource_metrics > ResourceMetrics.scope_metrics > ScopeMetrics.metrics > Metric.gauge
  return lengthDelimited(1, lengthDelimited(2, lengthDelimited(2, lengthDelimited(5, gauge))));
}

describe('a maximum-size metrics or traces request is checked in slices', () => {
  for (const signal of ['metrics', 'traces'] as const) {
    it(`${signal}: the skim pauses after every slice of the body and accepts it, as straight through`, () => {
      const { body } = maxSizePassThrough(signal);
      expect(body.length).toBeLessThanOrEqual(MAX_REQUEST_BYTES);
      expect(body.length).toBeGreaterThan(0.99 * MAX_REQUEST_BYTES);
      const r = sliced(signal, body);
      expect(r.pauses).toBeGreaterThan(5);
      expectSlicesBounded(r, body.length);
      expect(thrown(() => skimOtlpProto(signal, body))).toBeUndefined();
    });
  }

  it('one metric of a million data points pauses within the metric', () => {
    const body = oneMetricOfPoints(1_000_000);
    expect(body.length).toBeGreaterThan(5 * SKIM_SLICE_BYTES);
    const r = sliced('metrics', body);
    expectSlicesBounded(r, body.length);
  });

  it('a body malformed near its end is refused after the slices before, with the message of the skim straight through', () => {
    const { body } = maxSizePassThrough('traces');
    // A group tag (field 1, wire type 3) after the last resource.
    const bad = Buffer.concat([body, Buffer.from([0x0b])]);
    const straight = thrown(() => skimOtlpProto('traces', bad));
    expect(straight).toBeInstanceOf(DecodeError);
    const progress: SkimProgress = { walked: 0 };
    const steps = skimOtlpProtoSteps('traces', bad, progress);
    let pauses = 0;
    const err = thrown(() => {
      while (!steps.next().done) pauses++;
    });
    expect(pauses).toBeGreaterThan(5);
    expect(err).toBeInstanceOf(DecodeError);
    expect((err as Error).message).toBe((straight as Error).message);
  });

  it('the receivers check a protobuf request through the paused skim', () => {
    const { body } = maxSizePassThrough('metrics');
    const r = runSliced(validatePassThroughSteps({ signal: 'metrics', encoding: 'protobuf', body, receivedAtMs: 0 }, unbounded()), () => 0);
    expect(r.pauses).toBeGreaterThan(5);
  });
});

describe('an ordinary export (some 300 KB)', () => {
  it('is checked without a pause, and a request of 1.5 slices pauses once', () => {
    for (const signal of ['metrics', 'traces'] as const) {
      const small = maxSizePassThrough(signal, 300_000).body;
      expect(sliced(signal, small).pauses).toBe(0);
      const larger = maxSizePassThrough(signal, 1.5 * SKIM_SLICE_BYTES).body;
      expect(sliced(signal, larger).pauses).toBe(1);
      expect(runToEnd(skimOtlpProtoSteps(signal, larger))).toBeUndefined();
    }
  });
});
