/**
 * With an ingest token set, every wrong Authorization header gets 401 and never the token back, and the
 * check is constant-time by construction: each request compares two SHA-256 digests with timingSafeEqual, so
 * neither where a wrong token differs nor its length changes the work. (A timing measurement would be flaky
 * on a shared 2-core runner; the code path is what this asserts.)
 */
import fc from 'fast-check';
import type * as Crypto from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { postOtlp, startTestService, type TestService } from '../helpers.ts';

const spy = vi.hoisted(() => ({ calls: [] as [Buffer, Buffer][] }));

vi.mock('node:crypto', async (importOriginal) => {
  const real = await importOriginal<typeof Crypto>();
  const timingSafeEqual = (a: NodeJS.ArrayBufferView, b: NodeJS.ArrayBufferView): boolean => {
    spy.calls.push([Buffer.from(a.buffer, a.byteOffset, a.byteLength), Buffer.from(b.buffer, b.byteOffset, b.byteLength)]);
    return real.timingSafeEqual(a, b);
  };
  return { ...real, timingSafeEqual, default: { ...real, timingSafeEqual } };
});

const TOKEN = 'hw-ingest-7f3a9c1e5b2d4f6a8c0e';
let service: TestService;

beforeAll(async () => {
  service = await startTestService({ HOOKWATCH_INGEST_TOKEN: TOKEN });
});

afterAll(async () => {
  await service.close();
});

beforeEach(() => {
  spy.calls.length = 0;
});

async function send(authorization: string | undefined): Promise<{ status: number; body: string; challenge: string | null }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (authorization !== undefined) headers['authorization'] = authorization;
  const res = await postOtlp(service.otlpHttpUrl, '/v1/logs', '{}', headers);
  return { status: res.status, body: res.body.toString(), challenge: res.headers.get('www-authenticate') };
}

/** One comparison per request, of two 32-byte digests: the same work whatever the header holds. */
function expectDigestComparison(): void {
  expect(spy.calls).toHaveLength(1);
  const [a, b] = spy.calls[0] as [Buffer, Buffer];
  expect(a.length).toBe(32);
  expect(b.length).toBe(32);
}

describe('ingest token', () => {
  it('the right token gets 200, the scheme in any case and after any spaces (RFC 9110 11.1, as the API port)', async () => {
    for (const h of [`Bearer ${TOKEN}`, `bearer ${TOKEN}`, `BEARER ${TOKEN}`, `Bearer  ${TOKEN}`]) {
      spy.calls.length = 0;
      expect((await send(h)).status, h.slice(0, 8)).toBe(200);
      expectDigestComparison();
    }
  });

  const near = [
    undefined, '', 'Bearer', 'Bearer ', TOKEN, `Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, `Bearer ${TOKEN.slice(1)}`,
    `Basic ${Buffer.from(`user:${TOKEN}`).toString('base64')}`, `Bearer ${TOKEN.toUpperCase()}`, `Bearer ${'x'.repeat(8000)}`,
  ];
  for (const h of near) {
    it(`a wrong header (${h === undefined ? 'none' : JSON.stringify(h.slice(0, 40))}) gets 401 without the token`, async () => {
      const res = await send(h);
      expect(res.status).toBe(401);
      expect(res.challenge).toBe('Bearer');
      expect(res.body).not.toContain(TOKEN);
      expectDigestComparison();
    });
  }

  it('any header value: 401 through the same digest comparison, never the token in the answer', async () => {
    const headerValue = fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 300 });
    await fc.assert(fc.asyncProperty(fc.oneof(headerValue, headerValue.map((s) => `Bearer ${s}`)), async (h) => {
      fc.pre(h !== `Bearer ${TOKEN}`);
      spy.calls.length = 0;
      const res = await send(h);
      expect(res.status).toBe(401);
      expect(res.body).not.toContain(TOKEN);
      expectDigestComparison();
    }), { numRuns: 100 });
  });
});
