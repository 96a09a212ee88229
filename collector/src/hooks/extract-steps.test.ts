/**
 * Hook events are extracted from a large request in slices of EXTRACT_SLICE_RECORDS records
 * (extractHookEventsSteps), so the hook stage can serve the event loop between them; a Claude Code batch is one
 * slice. Sliced or not, the result is the same.
 */
import { describe, expect, it } from 'vitest';
import { batchTemplate, maxSizeRequest } from '../../../bench/lib/batch.ts';
import { runSliced } from '../../test/support/steps.ts';
import { decodeLogsProto } from '../otlp/decode-proto.ts';
import { EXTRACT_SLICE_RECORDS, extractHookEvents, extractHookEventsSteps, type ExtractOptions } from './extract.ts';
import { RecordCollector } from './record-extract.ts';

const RECEIVED_MS = Date.parse('2026-06-01T12:00:00Z');

/** Extraction options with a fixed clock, and a collector counting the records walked so far. */
function counting(): { opts: ExtractOptions; walked: () => number } {
  let walked = 0;
  const counter = new RecordCollector(() => {
    walked++;
    return false;
  }, () => undefined, (err): err is Error => err instanceof Error);
  return { opts: { nearThreshold: 8000, dimensions: ['team'], now: () => RECEIVED_MS, others: [counter] }, walked: () => walked };
}

describe('extracting hook events in slices', () => {
  it('pauses after every EXTRACT_SLICE_RECORDS records of a maximum-size request, to the same result as straight through', () => {
    const { body, records } = maxSizeRequest('protobuf');
    const req = decodeLogsProto(body);
    const c = counting();
    const r = runSliced(extractHookEventsSteps(req, c.opts), c.walked);
    expect(r.pauses).toBe(Math.ceil(records / EXTRACT_SLICE_RECORDS) - 1);
    for (const s of r.slices.slice(0, -1)) expect(s).toBe(EXTRACT_SLICE_RECORDS);
    expect(r.slices.reduce((a, b) => a + b, 0)).toBe(records);
    expect(r.value.events).toHaveLength(records);
    expect(r.value).toEqual(extractHookEvents(req, counting().opts));
  });

  it('takes a Claude Code batch of 512 records without a pause', () => {
    const req = decodeLogsProto(batchTemplate(512, 'protobuf').bytes);
    const c = counting();
    const r = runSliced(extractHookEventsSteps(req, c.opts), c.walked);
    expect(r.pauses).toBe(0);
    expect(r.slices).toEqual([512]);
  });
});
