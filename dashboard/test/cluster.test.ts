/**
 * The replicas panel on the alerts page in headless Chromium: two real hookwatch services on one real
 * PostgreSQL. Each names the same leader and lease epoch and lists both replicas with their heartbeat; the
 * leader's page says it is this replica. A SQLite hookwatch says it is a single process.
 */
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import type { ClusterResponse } from '../../shared/src/api.ts';
import { eventually, getJson, startTestService, type TestService } from '../../collector/test/helpers.ts';
import { startTestServer, type TestServer } from '../../collector/test/support/postgres/server.ts';
import { closePages, launch, screenshot, waitLoaded, watchedPage, type WatchedPage } from './harness.ts';

let browser: Browser;
let pgServer: TestServer;
const services: TestService[] = [];
const open: WatchedPage[] = [];

beforeAll(async () => {
  [browser, pgServer] = await Promise.all([launch(), startTestServer()]);
}, 60_000);
afterEach(async () => {
  const errs = await closePages(open);
  for (const s of services.splice(0)) await s.close();
  expect(errs).toEqual([]);
});
afterAll(async () => {
  await browser?.close();
  await pgServer?.stop();
});


it('names the leader, its epoch and both replicas on each replica\'s alerts page', async () => {
  const db = await pgServer.createDatabase();
  const a = await startTestService({ HOOKWATCH_DB: db, HOOKWATCH_POSTGRES_LEASE_TTL: '2s' });
  services.push(a);
  const b = await startTestService({ HOOKWATCH_DB: db, HOOKWATCH_POSTGRES_LEASE_TTL: '2s' });
  services.push(b);
  const view = await eventually('a leader and two replicas', async () => {
    const c = (await getJson<ClusterResponse>(b.httpUrl, '/api/v1/cluster')).body;
    return c.leader && c.replicas.length === 2 ? c : undefined;
  });
  const leaderSvc = a.coordination.leader.isLeader() ? a : b;
  for (const svc of [a, b]) {
    const w = await watchedPage(browser);
    open.push(w);
    await w.page.goto(`${svc.httpUrl}/alerts`);
    await waitLoaded(w.page);
    const leaderText = await w.page.locator('#cluster [data-field="leader"]').textContent();
    expect(leaderText).toContain(view.leader!.replica);
    expect(leaderText).toContain(`lease epoch ${view.leader!.epoch}`);
    expect(leaderText?.includes('this replica')).toBe(svc === leaderSvc);
    const rows = await w.page.locator('#cluster table.replicas tbody tr').allTextContents();
    expect(rows).toHaveLength(2);
    expect(rows.filter((r) => r.includes('leader'))).toHaveLength(1);
    expect(rows.every((r) => r.includes('running'))).toBe(true);
    expect(rows.filter((r) => r.includes('(this one)'))).toHaveLength(1);
    if (svc === leaderSvc) await screenshot(w.page, 'alerts-cluster');
  }
}, 60_000);

it('says a SQLite hookwatch is a single process', async () => {
  const svc = await startTestService();
  services.push(svc);
  const w = await watchedPage(browser);
  open.push(w);
  await w.page.goto(`${svc.httpUrl}/alerts`);
  await waitLoaded(w.page);
  expect(await w.page.locator('#cluster [data-field="leader"]').textContent()).toContain('Single process (SQLite store)');
}, 30_000);
