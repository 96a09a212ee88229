/**
 * Past retention.events the dashboard says what the range it shows lacks of the one chosen, in headless Chromium
 * against a real hookwatch: a user's executions older than the raw events kept are not counted, and the page says
 * so rather than let "no executions" read as a user who ran nothing; a range there counts whole hours, and the
 * page says that too. The data is written while retention kept it, then served under a 2-day retention. Past
 * retention.rollups nothing is kept at all, and the page says so rather than show a healthy, empty fleet.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import type { HookEvent } from '../../collector/src/hooks/model.ts';
import { hookId } from '../../collector/src/hooks/extract.ts';
import { SqliteStore } from '../../collector/src/store/sqlite/index.ts';
import { DAY, HOUR, MINUTE } from '../../collector/src/store/segments.ts';
import { startTestService, type TestService } from '../../collector/test/helpers.ts';
import { closePages, launch, waitLoaded, watchedPage, type WatchedPage } from './harness.ts';

const NOW = Date.now();
/** Five days ago, on the hour: beyond the 2d events retention served. */
const OLD = Math.floor((NOW - 5 * DAY) / HOUR) * HOUR;
const RECENT = Math.floor((NOW - 3 * HOUR) / MINUTE) * MINUTE;
const BASH = hookId('PostToolUse', 'PostToolUse:Bash');
const iso = (ms: number): string => new Date(ms).toISOString();
/** Where the events kept start under 2d (minute-sources.ts): the hour holding now - 2d (a minute's lead). */
const eventsFrom = (at: number): number => Math.floor((at + MINUTE - 2 * DAY) / HOUR) * HOUR;
/** "14:00", as the page writes a time in UTC. */
const clock = (ms: number): string => iso(ms).slice(11, 16);

let seq = 0;
function ev(timeMs: number, userId: string, sizes: boolean): HookEvent {
  const hookName = 'PostToolUse:Bash';
  return {
    kind: 'complete', dedupKey: `rc-${++seq}`, hookId: BASH, hookEvent: 'PostToolUse', hookName, timeMs,
    numHooks: 1, numSuccess: 1, numBlocking: 0, numNonBlockingError: 0, numCancelled: 0, durationMs: 10, stdoutChars: sizes ? 100 : null,
    additionalContextChars: null, systemMessageChars: null, initialUserMessageChars: null, outputsPersisted: sizes ? 0 : null, sizesKnown: sizes,
    status: sizes ? 'ok' : 'unknown', serviceName: 'claude-code', serviceVersion: '2.1.332', sessionId: `s-${userId}`, userId, userEmail: '',
    userAccountUuid: '', organizationId: '', terminalType: 'xterm', source: 'otlp', extra: {},
  };
}

let browser: Browser;
let svc: TestService;
/** The same data served under retention.rollups 1d (and 1h of events): nothing five days old is kept. */
let pruned: TestService;
let dir = '';
const open: WatchedPage[] = [];

/** u1 ran five times five days ago (three without sizes) and once three hours ago, written to `db` while kept. */
async function write(db: string): Promise<void> {
  const writer = new SqliteStore({ path: db, synchronous: 'normal', dimensions: [], retention: { eventsMs: 36500 * DAY, minuteRollupsMs: 36500 * DAY } });
  const events = [
    ev(OLD + 10 * MINUTE, 'u1', true), ev(OLD + 20 * MINUTE, 'u1', false), ev(OLD + 70 * MINUTE, 'u1', false),
    ev(OLD + 130 * MINUTE, 'u1', false), ev(OLD + 150 * MINUTE, 'u1', true), ev(RECENT, 'u1', true),
  ];
  expect((await writer.ingest(events)).inserted).toHaveLength(events.length);
  await writer.close();
}

beforeAll(async () => {
  browser = await launch();
  dir = mkdtempSync(join(tmpdir(), 'hookwatch-range-coverage-'));
  await write(join(dir, 'c.db'));
  await write(join(dir, 'pruned.db'));
  svc = await startTestService({ HOOKWATCH_DB: join(dir, 'c.db'), HOOKWATCH_RETENTION_EVENTS: '2d', HOOKWATCH_RETENTION_MINUTE_ROLLUPS: '2d' });
  pruned = await startTestService({ HOOKWATCH_DB: join(dir, 'pruned.db'), HOOKWATCH_RETENTION_EVENTS: '1h', HOOKWATCH_RETENTION_MINUTE_ROLLUPS: '1h', HOOKWATCH_RETENTION_ROLLUPS: '1d' });
}, 60_000);
afterEach(async () => {
  expect(await closePages(open)).toEqual([]);
});
afterAll(async () => {
  await browser?.close();
  await svc?.close();
  await pruned?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function page(path: string, service: TestService = svc): Promise<WatchedPage['page']> {
  const w = await watchedPage(browser, { timezoneId: 'UTC' });
  open.push(w);
  await w.page.goto(service.httpUrl + path);
  await waitLoaded(w.page);
  return w.page;
}

describe('a range past retention.events', () => {
  const customFrom = `range=custom&from=${iso(OLD - DAY + 17 * MINUTE)}&to=${iso(NOW)}`;

  it('says on the overview that a user filter counts only from where the raw events kept start', async () => {
    const before = eventsFrom(Date.now());
    const p = await page(`/?${customFrom}&f.user.id=u1`);
    const starts = [clock(before), clock(eventsFrom(Date.now()))];
    const note = (await p.locator('#range-coverage').textContent()) ?? '';
    expect(await p.locator('#range-coverage').isVisible()).toBe(true);
    expect(note).toMatch(/^Counted from .* only, where the raw events kept \(retention\.events\) start: what this view filters or breaks down by is read from them alone\.$/);
    expect(starts.some((t) => note.includes(t))).toBe(true);
  });

  it('says on the hook page that a range there counts whole hours, and that a breakdown by user counts from the events kept', async () => {
    const p = await page(`/hooks/${BASH}?range=custom&from=${iso(OLD + 17 * MINUTE)}&to=${iso(OLD + 2 * HOUR + 5 * MINUTE)}&by=user.id`);
    expect(await p.locator('#range-coverage').textContent()).toMatch(new RegExp(`^Counted over whole hours, .*${clock(OLD)} to .*${clock(OLD + 3 * HOUR)}: past retention\\.events only hourly figures are kept\\.$`));
    // The breakdown by user has nothing there: it says so, under its empty table.
    expect(await p.locator('#breakdown-coverage').textContent()).toMatch(/^Nothing counted: this range is older than the raw events kept/);
  });

  it('says on the overview that a user filter counts nothing in a range wholly older than the events kept', async () => {
    const p = await page(`/?range=custom&from=${iso(OLD - DAY)}&to=${iso(OLD + 3 * HOUR)}&f.user.id=u1`);
    expect(await p.locator('#range-coverage').textContent()).toMatch(/^Nothing counted: this range is older than the raw events kept \(retention\.events\)/);
    // The figures are still asked for and drawn (over the range chosen: the answer covered none of it).
    expect(await p.locator('[data-kpi] .kpi-value').count()).toBeGreaterThan(0);
  });

  it('says nothing of a range the events kept cover', async () => {
    const p = await page(`/?range=custom&from=${iso(RECENT - 17 * MINUTE)}&to=${iso(RECENT + 5 * MINUTE)}&f.user.id=u1`);
    expect(await p.locator('#range-coverage').isVisible()).toBe(false);
    expect(await p.locator('#hook-rows tr').count()).toBe(1);
  });
});

describe('a range past retention.rollups', () => {
  it('says on the overview that nothing is counted in a range wholly older than the rollups kept', async () => {
    const p = await page(`/?range=custom&from=${iso(OLD - DAY)}&to=${iso(OLD + 3 * HOUR)}`, pruned);
    expect(await p.locator('#range-coverage').isVisible()).toBe(true);
    expect(await p.locator('#range-coverage').textContent()).toBe('Nothing counted: this range is older than the hourly and daily figures kept (retention.rollups).');
  });

  it('says on the overview where a range reaching past them is counted from', async () => {
    const p = await page(`/?range=custom&from=${iso(OLD - DAY)}&to=${iso(NOW)}`, pruned);
    expect(await p.locator('#range-coverage').textContent()).toMatch(/^Counted from .* only, where the hourly and daily figures kept \(retention\.rollups\) start\.$/);
    expect(await p.locator('#hook-rows tr').count()).toBe(1);
  });
});
