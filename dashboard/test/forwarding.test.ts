/**
 * The forwarding page in headless Chromium against a real hookwatch: in inline mode during a downstream outage
 * (queue depth, oldest age, retries, the last error, then a dead letter), and in fan-out mode.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import type { ForwardingResponse } from '../../shared/src/api.ts';
import { fixtureRequests, getJson, postOtlp, startTestService, type TestService } from '../../collector/test/helpers.ts';
import { HttpDownstream } from '../../collector/test/support/downstream-recorder.ts';
import { closePages, launch, waitLoaded, watchedPage, type WatchedPage } from './harness.ts';

let browser: Browser;
const services: TestService[] = [];
const downstreams: HttpDownstream[] = [];
const open: WatchedPage[] = [];

beforeAll(async () => {
  browser = await launch();
});

afterEach(async () => {
  const errs = await closePages(open);
  for (const s of services.splice(0)) await s.close();
  for (const d of downstreams.splice(0)) await d.stop();
  expect(errs).toEqual([]);
});

afterAll(async () => {
  await browser?.close();
});

async function until(what: string, cond: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('forwarding page', () => {
  it('shows the queue during a downstream outage, then the dead letter it left', async () => {
    const downstream = new HttpDownstream();
    downstreams.push(downstream);
    downstream.mode = { kind: 'status', status: 503 };
    const endpoint = await downstream.start();
    const svc = await startTestService({ HOOKWATCH_FORWARD_ENDPOINT: endpoint, HOOKWATCH_FORWARD_RETRY_INITIAL_INTERVAL: '50ms', HOOKWATCH_FORWARD_RETRY_MAX_INTERVAL: '100ms' });
    services.push(svc);
    const requests = fixtureRequests('run2-httpprotobuf');
    for (const r of requests) expect((await postOtlp(svc.otlpHttpUrl, r.path, r.body, { 'content-type': r.contentType })).status).toBe(200);
    await until('retries', async () => (await getJson<ForwardingResponse>(svc.httpUrl, '/api/v1/forwarding')).body.destinations[0]!.retries >= 2);

    const w = await watchedPage(browser);
    open.push(w);
    await w.page.goto(`${svc.httpUrl}/forwarding`);
    await waitLoaded(w.page);
    const kpi = (id: string) => w.page.locator(`[data-kpi="${id}"] .kpi-value`).textContent();
    expect(await kpi('depth')).toBe(String(requests.length));
    expect(await kpi('oldest')).toMatch(/^\d+ s$/);
    expect(Number((await kpi('retries'))?.replace(/,/g, ''))).toBeGreaterThanOrEqual(2);
    expect(await w.page.locator('[data-field="state"]').textContent()).toContain('answered 503');
    expect(await w.page.locator('h2').first().textContent()).toBe(`${endpoint} (http/protobuf)`);
    await expect(w.page.locator('nav a[aria-current="page"]').textContent()).resolves.toBe('Forwarding');

    // The downstream now refuses for good: the head request becomes a dead letter, the rest are delivered.
    downstream.mode = { kind: 'status', status: 400 };
    await until('a dead letter', async () => (await getJson<ForwardingResponse>(svc.httpUrl, '/api/v1/forwarding')).body.destinations[0]!.deadLetters >= 1);
    downstream.mode = { kind: 'accept' };
    await until('an empty queue', async () => (await getJson<ForwardingResponse>(svc.httpUrl, '/api/v1/forwarding')).body.destinations[0]!.depth === 0);
    await w.page.reload();
    await waitLoaded(w.page);
    expect(await kpi('depth')).toBe('0');
    expect(await kpi('dead-letters')).not.toBe('0');
    const row = w.page.locator('table.dead-letters tbody tr').first();
    expect(await row.textContent()).toContain('400');
  });

  for (const protocol of ['http/protobuf', 'grpc'] as const) {
    it(`says in words why the destination cannot be reached, with the code and its host and port, never its key (${protocol})`, async () => {
      // A port nothing listens on: taken, then given back.
      const closed = createServer();
      await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
      const port = (closed.address() as AddressInfo).port;
      await new Promise((r) => closed.close(r));
      const endpoint = protocol === 'grpc' ? `http://127.0.0.1:${port}` : `http://127.0.0.1:${port}/otlp?api_key=k3y-in-the-query`;
      const svc = await startTestService({ HOOKWATCH_FORWARD_ENDPOINT: endpoint, HOOKWATCH_FORWARD_PROTOCOL: protocol, HOOKWATCH_FORWARD_HEADERS: 'x-api-key=k3y-in-a-header', HOOKWATCH_FORWARD_RETRY_INITIAL_INTERVAL: '40s', HOOKWATCH_FORWARD_RETRY_MAX_INTERVAL: '40s' });
      services.push(svc);
      const r = fixtureRequests('run2-httpprotobuf')[0]!;
      expect((await postOtlp(svc.otlpHttpUrl, r.path, r.body, { 'content-type': r.contentType })).status).toBe(200);
      await until('a retry waiting', async () => (await getJson<ForwardingResponse>(svc.httpUrl, '/api/v1/forwarding')).body.destinations[0]!.lastError !== null);

      const w = await watchedPage(browser);
      open.push(w);
      await w.page.goto(`${svc.httpUrl}/forwarding`);
      await waitLoaded(w.page);
      const state = await w.page.locator('[data-field="state"]').textContent();
      const destination = protocol === 'grpc' ? `http://127.0.0.1:${port} (grpc)` : `http://127.0.0.1:${port}/otlp (http/protobuf)`;
      expect(state).toContain(` · last error: cannot reach ${destination}: connection refused (ECONNREFUSED): nothing listens at 127.0.0.1:${port}`);
      expect(await w.page.locator('#app').textContent()).not.toContain('k3y');
    });
  }

  it('gives the next attempt its time to the second, a retry seconds away being no minute of its own', async () => {
    const downstream = new HttpDownstream();
    downstreams.push(downstream);
    // A long first wait, so the next attempt the page shows is the one the API gave. The backoff is full jitter (any
    // wait up to the interval), so the destination's Retry-After sets the floor.
    downstream.mode = { kind: 'status', status: 503, retryAfter: '120' };
    const endpoint = await downstream.start();
    const svc = await startTestService({ HOOKWATCH_FORWARD_ENDPOINT: endpoint, HOOKWATCH_FORWARD_RETRY_INITIAL_INTERVAL: '40s', HOOKWATCH_FORWARD_RETRY_MAX_INTERVAL: '40s' });
    services.push(svc);
    const r = fixtureRequests('run2-httpprotobuf')[0]!;
    expect((await postOtlp(svc.otlpHttpUrl, r.path, r.body, { 'content-type': r.contentType })).status).toBe(200);
    let next = '';
    await until('a retry waiting', async () => (next = (await getJson<ForwardingResponse>(svc.httpUrl, '/api/v1/forwarding')).body.destinations[0]!.nextAttemptAt ?? '') !== '');

    const w = await watchedPage(browser, { timezoneId: 'UTC' });
    open.push(w);
    await w.page.goto(`${svc.httpUrl}/forwarding`);
    await waitLoaded(w.page);
    const at = `${next.slice(8, 10)}/${next.slice(5, 7)}/${next.slice(0, 4)}, ${next.slice(11, 19)}`;
    expect(await w.page.locator('[data-field="state"]').textContent()).toContain(`State: waiting to retry (next attempt ${at}) · last error: `);
  });

  it('shows the dead letters (count, size, oldest, last refusal) and replays them with the Replay button', async () => {
    const downstream = new HttpDownstream();
    downstreams.push(downstream);
    // An expired key: retried for forward.retry.maxElapsedTime (short here), then dead letters.
    downstream.mode = { kind: 'status', status: 401 };
    const endpoint = await downstream.start();
    const svc = await startTestService({ HOOKWATCH_FORWARD_ENDPOINT: endpoint, HOOKWATCH_FORWARD_RETRY_INITIAL_INTERVAL: '20ms', HOOKWATCH_FORWARD_RETRY_MAX_INTERVAL: '50ms', HOOKWATCH_FORWARD_RETRY_MAX_ELAPSED_TIME: '200ms' });
    services.push(svc);
    const requests = fixtureRequests('run2-httpprotobuf');
    for (const r of requests) expect((await postOtlp(svc.otlpHttpUrl, r.path, r.body, { 'content-type': r.contentType })).status).toBe(200);
    await until('dead letters', async () => (await getJson<ForwardingResponse>(svc.httpUrl, '/api/v1/forwarding')).body.deadLetterSummary?.count === requests.length);

    const w = await watchedPage(browser);
    open.push(w);
    await w.page.goto(`${svc.httpUrl}/forwarding`);
    await waitLoaded(w.page);
    const kpi = (id: string) => w.page.locator(`[data-kpi="${id}"] .kpi-value`).textContent();
    expect(await kpi('dead-letters-held')).toBe(String(requests.length));
    expect(await kpi('dead-letter-bytes')).toMatch(/KiB|B$/);
    expect(await kpi('dead-letter-oldest')).not.toBe('none');
    expect(await w.page.locator('[data-field="dead-letter-last-error"]').textContent()).toContain('answered 401');

    // The key is rotated: Replay puts them back in the queue and they arrive.
    downstream.mode = { kind: 'accept' };
    await w.page.locator('#replay-dead-letters').click();
    await w.page.locator('.replay-result', { hasText: `Requeued ${requests.length} dead letters.` }).waitFor();
    await until('the replayed requests downstream', async () => downstream.requests.length > 0 && (await getJson<ForwardingResponse>(svc.httpUrl, '/api/v1/forwarding')).body.destinations[0]!.depth === 0);
    expect(Buffer.concat(downstream.requests.map((r) => r.body)).length).toBe(requests.reduce((n, r) => n + r.body.length, 0));
    await w.page.locator('[data-kpi="dead-letters-held"] .kpi-value', { hasText: /^0$/ }).waitFor();
    expect(await w.page.locator('#replay-dead-letters').isDisabled()).toBe(true);
  });

  it('says nothing is forwarded in fan-out mode', async () => {
    const svc = await startTestService();
    services.push(svc);
    const w = await watchedPage(browser);
    open.push(w);
    await w.page.goto(`${svc.httpUrl}/forwarding`);
    await waitLoaded(w.page);
    expect(await w.page.locator('#fan-out h2').textContent()).toContain('nothing is forwarded');
  });
});
