import { describe, expect, it } from 'vitest';
import { decodeLogsJson } from '../../collector/src/otlp/decode-json.ts';
import { decodeLogsProto } from '../../collector/src/otlp/decode-proto.ts';
import type { LogsRequest } from '../../collector/src/otlp/model.ts';
import { RECORD_STEP_MS, batchTemplate, stamp } from './batch.ts';

const SESSION = '0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0';

function records(req: LogsRequest): { session: unknown; ts: unknown; nanos: bigint; observed: bigint }[] {
  return req.resourceLogs.flatMap((rl) => rl.scopeLogs.flatMap((sl) => sl.logRecords.map((r) => ({
    session: r.attributes.get('session.id'),
    ts: r.attributes.get('event.timestamp'),
    nanos: r.timeUnixNano,
    observed: r.observedTimeUnixNano,
  }))));
}

describe('benchmark batches', () => {
  for (const encoding of ['protobuf', 'json'] as const) {
    it(`${encoding}: stamp rewrites the session and every record time, ending at the given time`, () => {
      const t = batchTemplate(64, encoding, Date.UTC(2026, 0, 1));
      const end = Date.UTC(2026, 10, 30, 12, 0, 0, 5);
      const body = stamp(t, SESSION, end);
      expect(body.length).toBe(t.bytes.length);
      const got = records(encoding === 'protobuf' ? decodeLogsProto(body) : decodeLogsJson(body.toString('utf8')));
      expect(got).toHaveLength(64);
      got.forEach((r, i) => {
        const ms = end - (63 - i) * RECORD_STEP_MS;
        expect(r).toEqual({ session: SESSION, ts: new Date(ms).toISOString(), nanos: BigInt(ms) * 1_000_000n, observed: BigInt(ms) * 1_000_000n });
      });
    });
  }
});
