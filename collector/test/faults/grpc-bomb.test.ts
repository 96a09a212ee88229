/**
 * Decompression bombs and stalled streams on the OTLP/gRPC port, against the real CLI in a child process whose
 * peak RSS (VmHWM) is read from /proc. A bomb is ~19 KB of gzip that inflates to 19 MiB of zeros: under the
 * 20 MiB request limit, so only authentication and the in-flight budget stand between 80 of them and 1.5 GiB.
 */
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { cliPerTest } from './cli-child.ts';
import { grpcFrame, rawGrpcCall } from './grpc-raw.ts';

const MiB = 1024 * 1024;
const LOGS = '/opentelemetry.proto.collector.logs.v1.LogsService/Export';
const BOMB = grpcFrame(gzipSync(Buffer.alloc(19 * MiB)), true);
const CALLS = 80;
const RSS_LIMIT = 512 * MiB;
const UNAUTHENTICATED = 16;
const UNAVAILABLE = 14;
const INVALID_ARGUMENT = 3;
const RESOURCE_EXHAUSTED = 8;

const start = cliPerTest();


describe('OTLP/gRPC under hostile clients', () => {
  it('with a token set, 80 concurrent bombs without it are refused UNAUTHENTICATED before any is inflated', async () => {
    const server = await start({ HOOKWATCH_INGEST_TOKEN: 'grpc-bomb-test-token' });
    const results = await Promise.all(Array.from({ length: CALLS }, () => rawGrpcCall(server.otlpGrpc, LOGS, BOMB, { headers: { 'grpc-encoding': 'gzip' } })));
    expect(results.map((r) => r.code)).toEqual(Array.from({ length: CALLS }, () => UNAUTHENTICATED));
    const peak = server.peakRss();
    expect(peak, `grpc bombs with token: peak RSS ${(peak / MiB).toFixed(0)} MiB`).toBeLessThan(RSS_LIMIT);
  }, 120_000);

  it('without a token, 80 concurrent bombs stay within the in-flight budget: each is refused, none grows memory past it', async () => {
    const server = await start({});
    const results = await Promise.all(Array.from({ length: CALLS }, () => rawGrpcCall(server.otlpGrpc, LOGS, BOMB, { headers: { 'grpc-encoding': 'gzip' } })));
    // 19 MiB of zeros is not a valid request (INVALID_ARGUMENT) once inflated; over the budget the answer is
    // UNAVAILABLE, which OTLP clients retry. Nothing else, and never OK.
    for (const r of results) expect([INVALID_ARGUMENT, UNAVAILABLE, RESOURCE_EXHAUSTED], r.message).toContain(r.code);
    // Over the budget: UNAVAILABLE with RetryInfo, so exporters back off and retry.
    for (const r of results.filter((x) => x.code === UNAVAILABLE)) expect(r.details, r.message).toBe(true);
    const peak = server.peakRss();
    expect(peak, `grpc bombs without token: peak RSS ${(peak / MiB).toFixed(0)} MiB, ${results.filter((r) => r.code === UNAVAILABLE).length} UNAVAILABLE`).toBeLessThan(RSS_LIMIT);
  }, 120_000);

  it('a stream holding a partial message is ended after otlp.requestTimeout', async () => {
    const server = await start({ HOOKWATCH_OTLP_REQUEST_TIMEOUT: '1s' });
    // A frame header announcing 1 MiB, followed by 10 bytes, and then nothing.
    const partial = Buffer.concat([Buffer.from([0, 0, 0x10, 0, 0]), Buffer.alloc(10)]);
    const result = await rawGrpcCall(server.otlpGrpc, LOGS, partial, { end: false, giveUpMs: 20_000 });
    expect(result.code).toBe(4); // DEADLINE_EXCEEDED
    expect(result.message).toMatch(/otlp\.requestTimeout/);
    expect(result.elapsedMs).toBeGreaterThanOrEqual(900);
  }, 60_000);
});
