/**
 * Chart tooltips as a reader hovering the points sees them, in a zone west of UTC: times in the page's zone (a day
 * bucket marked UTC), counts and sizes as numbers a person reads, sizes in characters against the cap.
 */
import { describe, expect, it } from 'vitest';
import { useFixture } from './experience-fixture.ts';
import { hoverTooltips, waitLoaded, watchedPage } from './harness.ts';

const fx = useFixture();

/** What no tooltip line may hold: raw milliseconds (13 digits, with or without separators), undefined, NaN. */
const UNREADABLE = /\d{1,3}(?:,\d{3}){4}|\d{13}|undefined|NaN/;

describe('chart tooltips', () => {
  it('read the growth and the cliff curve in characters, never a raw timestamp', async () => {
    const w = await watchedPage(fx.browser(), { timezoneId: 'America/Los_Angeles' });
    try {
      const id = await fx.hookId('SessionStart:startup');
      await w.page.goto(`${fx.svc().httpUrl}/hooks/${id}?range=30d`);
      await waitLoaded(w.page);
      await w.page.waitForSelector('#chart-growth-summary:not(:empty)');
      const growth = await hoverTooltips(w.page, 'chart-growth');
      expect(growth.filter((t) => UNREADABLE.test(t))).toEqual([]);
      expect(growth).toContain('30/11 (UTC) | daily largest output: 12,578 chars (2,578 chars over the cap)');
      const curve = await hoverTooltips(w.page, 'chart-curve');
      expect(curve.filter((t) => UNREADABLE.test(t))).toEqual([]);
      expect(curve).toContain(' | observed stdout: sent 12,578 chars, the model sees 2,000 chars');
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  });

  it('say an empty day bucket is empty, never show a box reading only "(UTC)"', async () => {
    const w = await watchedPage(fx.browser(), { timezoneId: 'America/Los_Angeles' });
    try {
      const id = await fx.hookId('SessionStart:startup');
      await w.page.goto(`${fx.svc().httpUrl}/hooks/${id}?range=30d`);
      await waitLoaded(w.page);
      const delivery = await hoverTooltips(w.page, 'chart-delivery');
      expect(delivery).toContain('31/10 (UTC) | no executions in this bucket');
      expect(delivery.filter((t) => !/^\d\d\/\d\d \(UTC\) \| /.test(t))).toEqual([]);
      await w.page.goto(`${fx.svc().httpUrl}/?range=30d`);
      await waitLoaded(w.page);
      const fleet = await hoverTooltips(w.page, 'chart-fleet');
      expect(fleet.length).toBeGreaterThan(0);
      expect(fleet.filter((t) => !/^\d\d\/\d\d \(UTC\) \| /.test(t))).toEqual([]);
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  });

  it('give sizes in characters against the cap on the cliff and fleet charts, hours in the page\'s zone', async () => {
    const w = await watchedPage(fx.browser(), { timezoneId: 'America/Los_Angeles' });
    try {
      const id = await fx.hookId('SessionStart:startup');
      // Three-hour buckets: times of day in Los Angeles, the newest bucket starting 22:00 on 29/11.
      await w.page.goto(`${fx.svc().httpUrl}/hooks/${id}?range=7d`);
      await waitLoaded(w.page);
      expect(await hoverTooltips(w.page, 'chart-cliff')).toContain('29/11, 22:00 | largest additionalContext: 12,000 chars (2,000 chars over the cap)'
        + ' | largest stdout: 12,578 chars (2,578 chars over the cap) | bucket with persisted outputs: 3 outputs persisted');
      await w.page.goto(`${fx.svc().httpUrl}/?range=7d`);
      await waitLoaded(w.page);
      const fleet = await hoverTooltips(w.page, 'chart-fleet');
      expect(fleet).toContain('29/11, 22:00 | largest output in the fleet: 12,578 chars (2,578 chars over the cap) | SessionStart:startup: 3 | PostToolUse:Bash: 1');
      expect(fleet.filter((t) => UNREADABLE.test(t))).toEqual([]);
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
  });
});
