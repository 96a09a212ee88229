/**
 * Decompression bombs on the OTLP/HTTP port with no token configured (the default), against the real CLI in a
 * child process whose peak RSS (VmHWM) is read from /proc. Each bomb is ~32 KB of gzip inflating to 32 MiB of
 * zeros, past the 20 MiB limit: the answer is 413, or 503 with Retry-After once the process-wide in-flight
 * budget is spent, and memory stays bounded either way.
 */
import { request } from 'node:http';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { cliPerTest } from './cli-child.ts';

const MiB = 1024 * 1024;
const BOMB = gzipSync(Buffer.alloc(32 * MiB));
const CALLS = 80;
const RSS_LIMIT = 512 * MiB;

const start = cliPerTest();

/** One POST on its own connection, as 80 separate hostile clients would send it. */
function post(url: string, body: Buffer, headers: Record<string, string> = {}): Promise<{ status: number; retryAfter: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/v1/logs`, { method: 'POST', agent: false, headers: { 'content-type': 'application/x-protobuf', 'content-encoding': 'gzip', 'content-length': body.length, ...headers } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('OTLP/HTTP under hostile clients', () => {
  it('80 concurrent gzip bombs are refused with 413 (or 503 + Retry-After past the in-flight budget) and peak RSS stays bounded', async () => {
    const server = await start();
    const results = await Promise.all(Array.from({ length: CALLS }, () => post(server.otlpHttp, BOMB)));
    for (const r of results) {
      expect([413, 503]).toContain(r.status);
      if (r.status === 503) expect(Number(r.retryAfter)).toBeGreaterThan(0);
    }
    expect(results.some((r) => r.status === 413)).toBe(true);
    const peak = server.peakRss();
    expect(peak, `http bombs: peak RSS ${(peak / MiB).toFixed(0)} MiB, ${results.filter((r) => r.status === 503).length} x 503`).toBeLessThan(RSS_LIMIT);
    // Still serving afterwards.
    expect((await fetch(`${server.http}/healthz`)).status).toBe(200);
  }, 120_000);

  it('with a token set, 80 concurrent bombs with a wrong one get 401 before any is read', async () => {
    const server = await start({ HOOKWATCH_INGEST_TOKEN: 'http-bomb-test-token' });
    const results = await Promise.all(Array.from({ length: CALLS }, () => post(server.otlpHttp, BOMB, { authorization: 'Bearer wrong' })));
    expect(results.map((r) => r.status)).toEqual(Array.from({ length: CALLS }, () => 401));
    const peak = server.peakRss();
    expect(peak, `http bombs with a wrong token: peak RSS ${(peak / MiB).toFixed(0)} MiB`).toBeLessThan(RSS_LIMIT);
  }, 120_000);
});
