/**
 * A hookwatch whose ports listen while its store opens (a PostgreSQL server not up yet: here a port nothing listens
 * on, refused at every attempt): what the HTTP port answers meanwhile is counted on /metrics as once it serves,
 * the probes and /metrics take the methods they take then, an OTLP/HTTP request is refused before its body is
 * read, and a rotated certificate is served already. A stop gives the wait up.
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig, toConfig } from '../src/config/index.ts';
import { startService } from '../src/service.ts';
import { StoreWait, StoreWaitGivenUpError } from '../src/store/open.ts';
import { silentLogger } from '../src/telemetry/logger.ts';
import { until } from './helpers.ts';
import { fingerprint, servedFingerprint, useTestPki } from './support/certs.ts';
import { freePort } from './support/free-port.ts';
import { sampleValue, scrapeMetrics } from './support/prometheus-text.ts';
import { rawExchange } from './support/raw-http.ts';
import { isolatedEnv, startServiceUnderTest, type ServiceUnderTest } from './support/service.ts';

interface Opening {
  httpUrl: string;
  otlpHttpUrl: string;
  /** Gives the wait up: the start rejects, having closed its ports. */
  stop(): Promise<void>;
}

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

/**
 * Starts hookwatch on a PostgreSQL URL nothing answers, on ports known before the start returns (it never does),
 * with `env` on top (the HTTP port over TLS: waited for once it shows its certificate).
 */
async function startOpening(env: Record<string, string> = {}): Promise<Opening> {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-opening-'));
  const [otlp, grpc, http, db] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const config = toConfig(loadConfig({ env: {
    ...isolatedEnv(dir),
    HOOKWATCH_DB: `postgres://hookwatch:opening-pw@127.0.0.1:${db}/hookwatch`,
    HOOKWATCH_OTLP_HTTP_ADDR: `127.0.0.1:${otlp}`, HOOKWATCH_OTLP_GRPC_ADDR: `127.0.0.1:${grpc}`, HOOKWATCH_HTTP_ADDR: `127.0.0.1:${http}`,
    ...env,
  } }));
  const wait = new StoreWait();
  const starting = startService(config, { logger: silentLogger, storeWait: wait });
  starting.catch(() => {});
  const opening: Opening = {
    httpUrl: `${config.http.tls ? 'https' : 'http'}://127.0.0.1:${http}`,
    otlpHttpUrl: `${config.otlp.tls ? 'https' : 'http'}://127.0.0.1:${otlp}`,
    stop: async () => {
      wait.giveUp();
      await expect(starting).rejects.toBeInstanceOf(StoreWaitGivenUpError);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  stops.push(opening.stop);
  if (config.http.tls) await until('the HTTP port showing its certificate while the store opens', () => servedFingerprint(http).then(() => true, () => false));
  else await until('/healthz answering while the store opens', async () => (await fetch(`${opening.httpUrl}/healthz`).catch(() => undefined))?.status === 200);
  return opening;
}

async function serving(): Promise<ServiceUnderTest> {
  const service = await startServiceUnderTest();
  stops.push(() => service.close());
  return service;
}

/** The status and Allow header of a request, its body read. */
async function answer(url: string, method: string): Promise<{ status: number; allow: string | null }> {
  const res = await fetch(url, { method });
  await res.arrayBuffer();
  return { status: res.status, allow: res.headers.get('allow') };
}

describe('the HTTP port while the store opens', () => {
  it('counts and times each request in hookwatch_http_requests_total, as once it serves', async () => {
    const opening = await startOpening();
    expect((await answer(`${opening.httpUrl}/healthz`, 'GET')).status).toBe(200);
    expect((await answer(`${opening.httpUrl}/readyz`, 'GET')).status).toBe(503);
    expect((await answer(`${opening.httpUrl}/api/v1/hooks`, 'GET')).status).toBe(503);
    expect((await answer(`${opening.httpUrl}/healthz`, 'POST')).status).toBe(405);
    const { families } = await scrapeMetrics(opening.httpUrl);
    const counted = (handler: string, code: string): number | undefined => sampleValue(families, 'hookwatch_http_requests_total', { handler, code });
    // The /healthz that said it answers, included.
    expect(counted('/healthz', '200')).toBeGreaterThanOrEqual(2);
    // The API's 503 under the route it is for, as once it serves (HookwatchApiErrors says which route fails).
    expect([counted('/healthz', '405'), counted('/readyz', '503'), counted('/api/v1/hooks', '503')]).toEqual([1, 1, 1]);
    expect(counted('other', '503')).toBeUndefined();
    expect(sampleValue(families, 'hookwatch_http_request_duration_seconds', { handler: '/readyz' }, 'hookwatch_http_request_duration_seconds_count')).toBe(1);
  });

  it('counts a request under the route the serving app gives its path, with the series of every route at 0, as once it serves', async () => {
    const [opening, service] = [await startOpening(), await serving()];
    const handlers = async (url: string): Promise<string[]> => {
      const samples = (await scrapeMetrics(url)).families.get('hookwatch_http_requests_total')?.samples ?? [];
      return samples.filter((x) => x.labels['code'] === '200').map((x) => String(x.labels['handler'])).sort();
    };
    const served = await handlers(service.httpUrl);
    expect(served).toEqual(expect.arrayContaining(['/api/v1/hooks', '/api/v1/hooks/:id/series', '/dashboard']));
    expect(await handlers(opening.httpUrl)).toEqual(served);
    // A file of the dashboard's (its style sheet) is the dashboard's too, as once it serves.
    for (const [path, method] of [['/api/v1/hooks/abc/series', 'GET'], ['/api/v1/silences', 'POST'], ['/hooks/abc', 'GET'], ['/styles.css', 'GET'], ['/api/v1/nothing', 'GET']] as const) {
      expect((await answer(`${opening.httpUrl}${path}`, method)).status, path).toBe(503);
    }
    const { families } = await scrapeMetrics(opening.httpUrl);
    const counted = (handler: string): number | undefined => sampleValue(families, 'hookwatch_http_requests_total', { handler, code: '503' });
    // A path no route is for (the API answers it 404 once it serves) under `other`, as then.
    expect([counted('/api/v1/hooks/:id/series'), counted('/api/v1/silences'), counted('/dashboard'), counted('other')]).toEqual([1, 1, 2, 1]);
  });

  it('answers another method on the probes and /metrics, and OPTIONS, as once it serves', async () => {
    const [opening, service] = [await startOpening(), await serving()];
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      for (const method of ['POST', 'PUT', 'DELETE', 'OPTIONS', 'HEAD']) {
        const when = await answer(`${service.httpUrl}${path}`, method);
        // /readyz answers 503 while opening, as a GET would: not ready.
        const expected = path === '/readyz' && method === 'HEAD' ? { ...when, status: 503 } : when;
        expect(await answer(`${opening.httpUrl}${path}`, method), `${method} ${path}`).toEqual(expected);
      }
    }
  });
});

describe('the OTLP/HTTP port while the store opens', () => {
  it('refuses a request 503 with Retry-After before reading its body, and closes the connection', async () => {
    const opening = await startOpening();
    // A body declared and never sent: an answer means it was not waited for (otlp.requestTimeout is 30 s).
    const refused = await rawExchange(opening.otlpHttpUrl, 'POST /v1/logs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n');
    expect(refused.head).toMatch(/^HTTP\/1\.1 503 /);
    expect(refused.head).toMatch(/\r\nretry-after: \d+\r\n/i);
    expect(refused.head).toMatch(/\r\nconnection: close(\r\n|$)/i);
    expect(JSON.parse(refused.body.toString('utf8'))).toMatchObject({ code: 14 });
    const { families } = await scrapeMetrics(opening.httpUrl);
    expect(sampleValue(families, 'hookwatch_otlp_requests_rejected_total', { transport: 'http', reason: 'store_unavailable' })).toBe(1);
    expect(sampleValue(families, 'hookwatch_otlp_requests_total', { transport: 'http', signal: 'logs', outcome: '503' })).toBe(1);
  });
});

describe('TLS while the store opens', () => {
  const pki = useTestPki('hookwatch-opening-tls-');

  it('serves a rotated certificate on every port without waiting for the store', async () => {
    const files = { certFile: join(pki.dir, 'opening.crt'), keyFile: join(pki.dir, 'opening.key') };
    const put = (from: typeof files): void => {
      copyFileSync(from.certFile, files.certFile);
      copyFileSync(from.keyFile, files.keyFile);
    };
    put(pki.server);
    const opening = await startOpening({
      HOOKWATCH_HTTP_TLS_CERT_FILE: files.certFile, HOOKWATCH_HTTP_TLS_KEY_FILE: files.keyFile, HOOKWATCH_HTTP_TLS_RELOAD_INTERVAL: '1s',
      HOOKWATCH_OTLP_TLS_CERT_FILE: files.certFile, HOOKWATCH_OTLP_TLS_KEY_FILE: files.keyFile, HOOKWATCH_OTLP_TLS_RELOAD_INTERVAL: '1s',
    });
    const ports = [opening.httpUrl, opening.otlpHttpUrl].map((u) => Number(new URL(u).port));
    for (const port of ports) expect(await servedFingerprint(port)).toBe(fingerprint(pki.server.certFile));
    put(pki.rotated);
    for (const port of ports) await expect.poll(() => servedFingerprint(port), { timeout: 5000, interval: 200 }).toBe(fingerprint(pki.rotated.certFile));
  });
});
