/**
 * Chart tooltips as a reader hovering the points sees them, in a zone west of UTC: times in the page's zone (a day
 * bucket marked UTC), counts and sizes as numbers a person reads, sizes in characters against the cap.
 */
import { describe, expect, it } from 'vitest';
import { PARTIAL, useFixture } from './experience-fixture.ts';
import { hoverTooltips, waitLoaded, watchedPage, type WatchedPage } from './harness.ts';

const fx = useFixture();

/**
 * Runs `use` on a page in Los Angeles time, `open(path)` loading a view of the fixture's hookwatch; the page logs
 * no error meanwhile, and it is closed afterwards.
 */
async function inLosAngeles(use: (w: WatchedPage, open: (path: string) => Promise<void>) => Promise<void>): Promise<void> {
  const w = await watchedPage(fx.browser(), { timezoneId: 'America/Los_Angeles' });
  try {
    await use(w, async (path) => {
      await w.page.goto(`${fx.svc().httpUrl}${path}`);
      await waitLoaded(w.page);
    });
    expect(w.errors).toEqual([]);
  } finally {
    await w.close();
  }
}

/** A day bucket's tooltip title: its UTC day, or for a day the range cuts the UTC hours it covers. */
const DAY_TITLE = /^\d\d\/\d\d (?:\(UTC\)|\d\d:\d\d–\d\d:\d\d \(UTC, partial\)) \| /;

/** What no tooltip line may hold: raw milliseconds (13 digits, with or without separators), undefined, NaN. */
const UNREADABLE = /\d{1,3}(?:,\d{3}){4}|\d{13}|undefined|NaN/;

describe('chart tooltips', () => {
  it('read the growth and the cliff curve in characters, never a raw timestamp', async () => {
    await inLosAngeles(async (w, open) => {
      const id = await fx.hookId('SessionStart:startup');
      await open(`/hooks/${id}?range=30d`);
      await w.page.waitForSelector('#chart-growth-summary:not(:empty)');
      const growth = await hoverTooltips(w.page, 'chart-growth');
      expect(growth.filter((t) => UNREADABLE.test(t))).toEqual([]);
      expect(growth).toContain('30/11 00:00–08:30 (UTC, partial) | daily largest output: 12,578 chars (2,578 chars over the cap)');
      const curve = await hoverTooltips(w.page, 'chart-curve');
      expect(curve.filter((t) => UNREADABLE.test(t))).toEqual([]);
      // Titled like the other charts' tooltips: by where the point sits on the x axis, the size sent.
      expect(curve).toContain('sent: 12,578 chars (2,578 chars over the cap) | observed stdout: the model sees 2,000 chars, 10,578 chars lost');
      expect(curve.filter((t) => t.startsWith(' | '))).toEqual([]);
    });
  });

  it('say an empty day bucket is empty, never show a box reading only "(UTC)"', async () => {
    await inLosAngeles(async (w, open) => {
      const id = await fx.hookId('SessionStart:startup');
      await open(`/hooks/${id}?range=30d`);
      const delivery = await hoverTooltips(w.page, 'chart-delivery');
      // The first day counts from the range's start (08:30 UTC), and says so.
      expect(delivery).toContain('31/10 08:30–24:00 (UTC, partial) | no executions in this bucket');
      expect(delivery.filter((t) => !DAY_TITLE.test(t))).toEqual([]);
      await open('/?range=30d');
      const fleet = await hoverTooltips(w.page, 'chart-fleet');
      expect(fleet.length).toBeGreaterThan(0);
      expect(fleet.filter((t) => !DAY_TITLE.test(t))).toEqual([]);
    });
  });

  it('say "none known" of persisted outputs where executions sent no size data, never a bare 0', async () => {
    await inLosAngeles(async (w, open) => {
      await open(`/hooks/${await fx.hookId(PARTIAL)}`);
      const delivery = await hoverTooltips(w.page, 'chart-delivery');
      const persisted = delivery.flatMap((t) => t.split(' | ')).filter((l) => l.startsWith('outputs persisted'));
      expect(persisted).toEqual(['outputs persisted (not delivered): none known (17 executions sent no size data)']);
      expect(await w.page.locator('#chart-delivery-summary').textContent()).toBe('33 hook commands reported success; no output is known to have been persisted instead of delivered (17 executions sent no size data).');
    });
  });

  it('give sizes in characters against the cap on the cliff and fleet charts, hours in the page\'s zone', async () => {
    await inLosAngeles(async (w, open) => {
      const id = await fx.hookId('SessionStart:startup');
      // Three-hour buckets: times of day in Los Angeles, the newest bucket starting 22:00 on 29/11 and, the range
      // ending at 00:30 on 30/11 there, partial.
      await open(`/hooks/${id}?range=7d`);
      expect(await hoverTooltips(w.page, 'chart-cliff')).toContain('29/11, 22:00–30/11, 00:30 (partial) | largest additionalContext: 12,000 chars (2,000 chars over the cap)'
        + ' | largest stdout: 12,578 chars (2,578 chars over the cap) | bucket with persisted outputs: 3 outputs persisted');
      await open('/?range=7d');
      const fleet = await hoverTooltips(w.page, 'chart-fleet');
      expect(fleet).toContain('29/11, 22:00–30/11, 00:30 (partial) | largest output in the fleet: 12,578 chars (2,578 chars over the cap) | SessionStart:startup: 3 | PostToolUse:Bash: 1');
      expect(fleet.filter((t) => UNREADABLE.test(t))).toEqual([]);
    });
  });
});
