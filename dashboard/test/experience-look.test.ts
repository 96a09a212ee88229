/**
 * The dashboard's look and controls in headless Chromium against a real hookwatch fed the captured Claude Code
 * 2.1.332 requests: the custom range and time zone, refresh controls, dark mode, a 390 px phone, its own 404
 * page and heading order, and no console error on any page in any of those.
 */
import { describe, expect, it } from 'vitest';
import { useFixture } from './experience-fixture.ts';
import { COLUMNS } from '../src/pages/overview-state.ts';
import { waitLoaded } from './harness.ts';

const fx = useFixture();
const page = fx.page;
const hookId = fx.hookId;

/** Relative luminance of a CSS rgb() colour (WCAG). */
function luminance(css: string): number {
  const [r = 0, g = 0, b = 0] = (css.match(/[\d.]+/g) ?? []).map(Number).map((v) => {
    const c = v / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
const contrast = (a: string, b: string): number => {
  const [x, y] = [luminance(a), luminance(b)].sort((m, n) => n - m) as [number, number];
  return (x + 0.05) / (y + 0.05);
};

describe('range, time zone and refresh', () => {
  it('has a readable Apply button, DD/MM/YYYY 24-hour inputs in the shown time zone, and applies them', async () => {
    const context = await fx.browser().newContext({ viewport: { width: 1280, height: 900 }, timezoneId: 'Europe/Berlin' });
    try {
      const p = await context.newPage();
      const errors: string[] = [];
      p.on('console', (m) => void (m.type() === 'error' && errors.push(m.text())));
      await p.goto(`${fx.svc().httpUrl}/`);
      await waitLoaded(p);
      expect(await p.textContent('#time-zone option[value="local"]')).toContain('Europe/Berlin (UTC+01:00)');
      await p.click('details.custom > summary');
      const apply = p.locator('.custom-range button.apply');
      const [fg, bg] = await apply.evaluate((b) => [getComputedStyle(b).color, getComputedStyle(b).backgroundColor]);
      expect(contrast(fg as string, bg as string)).toBeGreaterThan(4.5);
      expect(await p.inputValue('#range-from')).toMatch(/^\d\d\/\d\d\/\d{4} \d\d:\d\d$/);
      expect(await p.textContent('.custom-range')).toContain('Europe/Berlin');
      await p.fill('#range-from', '29/11/2026 08:00');
      await p.fill('#range-to', '30/11/2026 13:30');
      await apply.click();
      await p.waitForURL(/range=custom/);
      expect(new URL(p.url()).searchParams.get('from')).toBe('2026-11-29T07:00:00.000Z');
      expect(new URL(p.url()).searchParams.get('to')).toBe('2026-11-30T12:30:00.000Z');
      await waitLoaded(p);
      // Berlin's clocks skip from 02:00 to 03:00 on 29/03/2026: 02:30 is no time there, not 03:30 in silence.
      await p.click('details.custom > summary');
      await p.fill('#range-from', '29/03/2026 02:30');
      await p.fill('#range-to', '29/03/2026 12:00');
      await apply.click();
      expect(await p.textContent('.custom-range .form-error')).toBe('29/03/2026 02:30 does not exist in Europe/Berlin: the clocks skip it when daylight saving time starts.');
      expect(new URL(p.url()).searchParams.get('from')).toBe('2026-11-29T07:00:00.000Z');
      // Over the night they go back (25/10/2026), the range ends in another offset than it starts in, and says so.
      await p.fill('#range-from', '24/10/2026 12:00');
      await p.fill('#range-to', '26/10/2026 12:00');
      await apply.click();
      await p.waitForURL(/from=2026-10-24/);
      expect([new URL(p.url()).searchParams.get('from'), new URL(p.url()).searchParams.get('to')]).toEqual(['2026-10-24T10:00:00.000Z', '2026-10-26T11:00:00.000Z']);
      await waitLoaded(p);
      expect(await p.textContent('.range-label')).toContain('24/10/2026, 12:00 to 26/10/2026, 12:00 Europe/Berlin (UTC+02:00 to UTC+01:00)');
      // UTC: every time on the page moves to UTC, and the inputs with it.
      await p.selectOption('#time-zone', 'UTC');
      await waitLoaded(p);
      await p.click('details.custom > summary');
      expect(await p.inputValue('#range-from')).toBe('24/10/2026 10:00');
      await p.fill('#range-from', '31/02/2026 07:00');
      await p.locator('.custom-range button.apply').click();
      expect(await p.textContent('.custom-range .form-error')).toBe('Write dates as DD/MM/YYYY HH:MM.');
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('titles an axis of day buckets as UTC days, read west of UTC where a day starts the evening before', async () => {
    const context = await fx.browser().newContext({ viewport: { width: 1280, height: 900 }, timezoneId: 'America/Los_Angeles' });
    try {
      const p = await context.newPage();
      const errors: string[] = [];
      p.on('console', (m) => void (m.type() === 'error' && errors.push(m.text())));
      const axisTitles = (ids: string[]): Promise<Record<string, unknown>> => p.evaluate((canvases) => {
        const C = (window as unknown as { Chart: { getChart(id: string): { options: { scales: { x: { title?: { display?: boolean; text?: string } } } } } | undefined } }).Chart;
        return Object.fromEntries(canvases.map((c) => {
          const t = C.getChart(c)?.options.scales.x.title;
          return [c, t?.display ? t.text : null];
        }));
      }, ids);
      // The title of the tooltip over each chart's newest bucket (the last point of its first dataset).
      const tooltipTitles = (ids: string[]): Promise<Record<string, string>> => p.evaluate((canvases) => {
        type T = { setActiveElements(a: { datasetIndex: number; index: number }[], at: { x: number; y: number }): void; title: string[] };
        const C = (window as unknown as { Chart: { getChart(id: string): { tooltip: T; data: { datasets: { data: unknown[] }[] }; update(): void } | undefined } }).Chart;
        return Object.fromEntries(canvases.map((c) => {
          const chart = C.getChart(c);
          if (!chart) return [c, 'no chart'];
          chart.tooltip.setActiveElements([{ datasetIndex: 0, index: (chart.data.datasets[0]?.data.length ?? 1) - 1 }], { x: 10, y: 10 });
          chart.update();
          return [c, chart.tooltip.title.join(' ')];
        }));
      }, ids);
      const id = await hookId('SessionStart:startup');
      // 30 days: one bucket a day, each labelled with its UTC date; the page's other times are Los Angeles'.
      await p.goto(`${fx.svc().httpUrl}/hooks/${id}?range=30d`);
      await waitLoaded(p);
      await p.waitForSelector('#chart-growth-summary:not(:empty)');
      expect(await p.textContent('#time-zone option[value="local"]')).toContain('America/Los_Angeles');
      expect(await axisTitles(['chart-cliff', 'chart-delivery', 'chart-growth'])).toEqual({ 'chart-cliff': 'day (UTC)', 'chart-delivery': 'day (UTC)', 'chart-growth': 'day (UTC)' });
      // Hovering a day says it is a UTC day too, not just "30/11" beside the page's Los Angeles times.
      // The newest day, which the range cuts at 08:30 UTC, says the UTC hours it covers, on the growth chart too.
      const today = '30/11 00:00–08:30 (UTC, partial)';
      expect(await tooltipTitles(['chart-cliff', 'chart-delivery', 'chart-growth'])).toEqual({ 'chart-cliff': today, 'chart-delivery': today, 'chart-growth': today });
      await p.goto(`${fx.svc().httpUrl}/?range=30d`);
      await waitLoaded(p);
      expect(await axisTitles(['chart-fleet'])).toEqual({ 'chart-fleet': 'day (UTC)' });
      expect(await tooltipTitles(['chart-fleet'])).toEqual({ 'chart-fleet': today });
      // Hours are in the zone the header names: no title claims otherwise.
      await p.goto(`${fx.svc().httpUrl}/hooks/${id}?range=24h`);
      await waitLoaded(p);
      expect(await axisTitles(['chart-cliff', 'chart-delivery'])).toEqual({ 'chart-cliff': null, 'chart-delivery': null });
      expect(Object.values(await tooltipTitles(['chart-cliff', 'chart-delivery'])).filter((t) => t.includes('UTC'))).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('opens the Custom range only when asked, whatever the range, and closes it on Escape', async () => {
    const { page: p } = await page();
    await p.goto(`${fx.svc().httpUrl}/?range=custom&from=2026-11-29T08:00:00.000Z&to=2026-11-30T08:00:00.000Z`);
    await waitLoaded(p);
    const open = (): Promise<boolean> => p.evaluate(() => (document.querySelector('details.custom') as HTMLDetailsElement).open);
    expect(await open()).toBe(false);
    // The range shown is custom: its control looks selected, as a preset's does, and no preset does.
    expect(await p.getAttribute('details.custom > summary', 'aria-current')).toBe('true');
    expect(await p.$$('button.range-preset[aria-pressed="true"]')).toHaveLength(0);
    const look = (sel: string): Promise<string> => p.$eval(sel, (el) => getComputedStyle(el).backgroundColor);
    expect(await look('details.custom > summary')).not.toBe(await look('button.range-preset'));
    await p.focus('details.custom > summary');
    await p.keyboard.press('Enter');
    expect(await open()).toBe(true);
    await p.focus('#range-from');
    await p.keyboard.press('Escape');
    expect(await open()).toBe(false);
    expect(await p.evaluate(() => document.activeElement?.tagName)).toBe('SUMMARY');
    await p.click('button[data-range="7d"]');
    await p.waitForURL(/range=7d/);
    expect(await p.getAttribute('details.custom > summary', 'aria-current')).toBeNull();
    expect(await p.getAttribute('button[data-range="7d"]', 'aria-pressed')).toBe('true');
  });

  it('closes the Custom range on a phone once the focus or a click moves on to what it covers, not while it is used', async () => {
    const { page: p } = await page({ width: 375, height: 800 });
    await p.goto(`${fx.svc().httpUrl}/?refresh=off`);
    await waitLoaded(p);
    const open = (): Promise<boolean> => p.evaluate(() => (document.querySelector('details.custom') as HTMLDetailsElement).open);
    const inside = (): Promise<boolean> => p.evaluate(() => document.querySelector('details.custom')?.contains(document.activeElement) ?? false);
    // Tabbed through: open while the focus is in its fields, closed once it moves on to the controls beneath it.
    await p.focus('details.custom > summary');
    await p.keyboard.press('Enter');
    expect(await open()).toBe(true);
    for (let tabs = 0; tabs < 5 && (await inside()); tabs++) {
      expect(await open()).toBe(true);
      await p.keyboard.press('Tab');
    }
    expect(await inside()).toBe(false);
    expect(await p.evaluate(() => document.activeElement?.tagName)).not.toBe('BODY');
    expect(await open()).toBe(false);
    // Shift+Tab back out of it past its summary, to the preset before it, closes it too.
    await p.focus('details.custom > summary');
    await p.keyboard.press('Enter');
    await p.keyboard.press('Shift+Tab');
    expect(await p.evaluate(() => document.activeElement?.getAttribute('data-range'))).toBe('30d');
    expect(await open()).toBe(false);
    // Clicked and typed in, its own text clicked: it stays open. A click elsewhere closes it.
    await p.click('details.custom > summary');
    await p.click('#range-from');
    await p.keyboard.type('1');
    await p.click('.custom-range .muted');
    expect(await open()).toBe(true);
    await p.click('main h1');
    expect(await open()).toBe(false);
    // Escape in it still closes it, the focus back on its summary.
    await p.click('details.custom > summary');
    await p.focus('#range-to');
    await p.keyboard.press('Escape');
    expect(await open()).toBe(false);
    expect(await p.evaluate(() => document.activeElement?.tagName)).toBe('SUMMARY');
  });

  it('pauses, resumes, refreshes now and changes the interval without losing the view', async () => {
    const { page: p } = await page();
    await p.goto(`${fx.svc().httpUrl}/?sort=name&dir=asc&refresh=1s`);
    await waitLoaded(p, 2);
    await p.click('#refresh-pause');
    expect(new URL(p.url()).searchParams.get('refresh')).toBe('off');
    expect(new URL(p.url()).searchParams.get('sort')).toBe('name');
    expect(await p.textContent('#last-updated')).toContain('paused');
    const loads = async (): Promise<number> => Number(await p.evaluate(() => document.body.dataset['loaded'] ?? '0'));
    await p.waitForFunction(() => !document.body.hasAttribute('aria-busy'));
    const paused = await loads();
    await p.waitForTimeout(2500);
    expect(await loads()).toBe(paused);
    await p.click('#refresh-now');
    await waitLoaded(p, paused + 1);
    await p.click('#refresh-pause');
    expect(new URL(p.url()).searchParams.get('refresh')).toBe('1s');
    await p.selectOption('#refresh-interval', '5s');
    expect(new URL(p.url()).searchParams.get('refresh')).toBe('5s');
  });
});

describe('dark mode, phones and every page', () => {
  it('keeps white text on every status badge and the custom range\'s muted text readable (WCAG AA), light and dark', async () => {
    for (const colorScheme of ['light', 'dark'] as const) {
      const context = await fx.browser().newContext({ viewport: { width: 1280, height: 900 }, colorScheme });
      try {
        const p = await context.newPage();
        await p.goto(`${fx.svc().httpUrl}/`);
        await waitLoaded(p);
        const badges = await p.evaluate(() => ['status-over', 'status-near', 'status-ok', 'status-unknown', 'state-firing', 'state-pending', 'state-resolved', 'state-superseded', 'state-data-expired'].map((cls) => {
          const el = document.createElement('span');
          el.className = `status ${cls}`;
          el.textContent = 'x';
          document.querySelector('main')?.appendChild(el);
          const st = getComputedStyle(el);
          const out = { cls, fg: st.color, bg: st.backgroundColor };
          el.remove();
          return out;
        }));
        for (const b of badges) expect({ scheme: colorScheme, cls: b.cls, ok: contrast(b.fg, b.bg) >= 4.5 }).toEqual({ scheme: colorScheme, cls: b.cls, ok: true });
        await p.click('details.custom > summary');
        const [fg, bg] = await p.locator('.custom-range .muted').evaluate((el) => [getComputedStyle(el).color, getComputedStyle(el.closest('.custom-range') as Element).backgroundColor]);
        expect(contrast(fg as string, bg as string)).toBeGreaterThanOrEqual(4.5);
      } finally {
        await context.close();
      }
    }
  });

  it('follows a dark system theme, charts included, and the toggle overrides it', async () => {
    const context = await fx.browser().newContext({ viewport: { width: 1280, height: 900 }, colorScheme: 'dark' });
    try {
      const p = await context.newPage();
      const errors: string[] = [];
      p.on('console', (m) => void (m.type() === 'error' && errors.push(m.text())));
      const id = await hookId('SessionStart:startup');
      await p.goto(`${fx.svc().httpUrl}/hooks/${id}`);
      await waitLoaded(p);
      const look = (): Promise<{ bg: string; panel: string; text: string; axis: string }> => p.evaluate(() => {
        const c = (window as unknown as { Chart: { getChart(id: string): { options: { scales: { y: { ticks: { color: string } } } } }; defaults: { color: string } } }).Chart;
        return {
          bg: getComputedStyle(document.body).backgroundColor,
          panel: getComputedStyle(document.querySelector('.panel') as Element).backgroundColor,
          text: getComputedStyle(document.body).color,
          axis: String(c.defaults.color),
        };
      });
      const dark = await look();
      expect(luminance(dark.panel)).toBeLessThan(0.05);
      expect(contrast(dark.text, dark.panel)).toBeGreaterThan(7);
      expect(luminance(await p.evaluate((c) => { const el = document.createElement('div'); el.style.color = c; document.body.appendChild(el); const v = getComputedStyle(el).color; el.remove(); return v; }, dark.axis))).toBeGreaterThan(0.3);
      // system -> dark -> light: the choice wins over the system and survives a reload.
      await p.click('#theme-toggle');
      await waitLoaded(p);
      await p.click('#theme-toggle');
      await waitLoaded(p);
      expect(await p.evaluate(() => document.documentElement.dataset['theme'])).toBe('light');
      await p.reload();
      await waitLoaded(p);
      const light = await look();
      expect(luminance(light.panel)).toBeGreaterThan(0.9);
      expect(luminance(await p.evaluate((c) => { const el = document.createElement('div'); el.style.color = c; document.body.appendChild(el); const v = getComputedStyle(el).color; el.remove(); return v; }, light.axis))).toBeLessThan(0.3);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('fits the overview\'s key columns on a 390 px phone without sideways scrolling', async () => {
    const { page: p } = await page({ width: 390, height: 844 });
    await p.goto(`${fx.svc().httpUrl}/`);
    await waitLoaded(p);
    await p.waitForFunction(() => performance.getEntriesByName('hookwatch:first-charts').length > 0);
    const measure = () => p.evaluate(() => {
      const t = document.querySelector('#hooks-table') as HTMLElement;
      const rows = [...document.querySelectorAll('#hook-rows tr')];
      const visible = (sel: string): boolean => rows.every((r) => {
        const c = r.querySelector(sel);
        if (!c) return false;
        const b = c.getBoundingClientRect();
        return b.width > 0 && b.right <= window.innerWidth;
      });
      return {
        page: document.documentElement.scrollWidth - window.innerWidth,
        table: t.scrollWidth - (t.parentElement as HTMLElement).clientWidth,
        status: visible('td:nth-child(1) .status'), hook: visible('th[scope="row"] a'), persisted: visible('td:nth-child(6)'), largest: visible('td:nth-child(7)'),
        optHidden: rows.every((r) => [...r.querySelectorAll('.opt')].every((c) => getComputedStyle(c).display === 'none')),
        tallest: Math.max(...rows.map((r) => r.getBoundingClientRect().height)),
      };
    });
    const m = await measure();
    expect(m).toMatchObject({ page: 0, status: true, hook: true, persisted: true, largest: true, optHidden: true });
    expect(m.table).toBeLessThanOrEqual(0);
    expect(m.tallest).toBeLessThan(100);
    // A hook named by its command line, pipes and all, with no separator the name used to break at.
    // (A string: the test runner would rewrite an import() written in a function.)
    const name = 'PreToolUse:Bash(jq|sort|uniq|head|tail|xargs|grep|sed|awk|wc|cut|tr)';
    await p.evaluate(`import('/dashboard/src/dom.ts').then((dom) => dom.replace(document.querySelector('#hook-rows tr a.hook-link'), dom.breakable(${JSON.stringify(name)})))`);
    expect(await p.textContent('#hook-rows tr a.hook-link')).toBe(name);
    expect(await measure()).toMatchObject({ page: 0, status: true, hook: true, persisted: true, largest: true });
  });

  it('fits the breakdowns\' key columns on a 390 px phone without sideways scrolling', async () => {
    const { page: p } = await page({ width: 390, height: 844 });
    await p.goto(`${fx.svc().httpUrl}/hooks/${await hookId('SessionStart:startup')}?range=7d`);
    await waitLoaded(p);
    await p.waitForSelector('#by-version tbody tr');
    await p.waitForSelector('#by-dimension tbody tr');
    const m = await p.evaluate(() => ['#by-version', '#by-dimension'].map((sel) => {
      const t = document.querySelector(sel) as HTMLElement;
      const shown = [...t.querySelectorAll('thead th')].filter((th) => th.getBoundingClientRect().width > 0).map((th) => th.textContent);
      return { sel, overflow: t.scrollWidth - (t.parentElement as HTMLElement).clientWidth, shown: shown.slice(1) };
    }));
    // The value, its status, what was persisted and the largest output: what a hook author looks for on a phone.
    expect(m).toEqual(['#by-version', '#by-dimension'].map((sel) => ({ sel, overflow: expect.toSatisfy((n: number) => n <= 0), shown: ['Status', 'Outputs persisted', 'Largest output'] })));
    // Every column on a laptop.
    await p.setViewportSize({ width: 1280, height: 800 });
    expect(await p.$$eval('#by-version thead th', (ths) => ths.filter((th) => th.getBoundingClientRect().width > 0).length)).toBe(7);
  });

  it.each([1280, 1024])('shows every column of the hooks table on a %i px laptop, Last seen included, without sideways scrolling', async (width) => {
    const { page: p } = await page({ width, height: 800 });
    await p.goto(`${fx.svc().httpUrl}/`);
    await waitLoaded(p);
    await p.waitForFunction(() => performance.getEntriesByName('hookwatch:first-charts').length > 0);
    const m = await p.evaluate(() => {
      const t = document.querySelector('#hooks-table') as HTMLElement;
      const box = (t.parentElement as HTMLElement).getBoundingClientRect();
      const last = [...document.querySelectorAll('#hooks-table thead th, #hook-rows tr > :last-child')].at(-1)?.getBoundingClientRect();
      const shown = [...document.querySelectorAll('#hooks-table thead th')].filter((th) => th.getBoundingClientRect().width > 0).map((th) => th.textContent?.replace(/[▲▼]/g, '').trim());
      return { overflow: t.scrollWidth - (t.parentElement as HTMLElement).clientWidth, lastRight: last?.right ?? Infinity, boxRight: box.right, shown };
    });
    expect(m.overflow).toBeLessThanOrEqual(0);
    expect(m.lastRight).toBeLessThanOrEqual(m.boxRight);
    // Fitted, not thinned: every column is there.
    expect(m.shown).toEqual(COLUMNS.map((c) => c.label));
  });

  it('wraps a long name inside a run without cutting an emoji in two', async () => {
    const { page: p } = await page();
    await p.goto(`${fx.svc().httpUrl}/`);
    await waitLoaded(p);
    // The 24th code unit is the first half of the emoji: the cut goes before it, not between its halves.
    const name = `${'a'.repeat(23)}😀${'b'.repeat(30)}`;
    const pieces = (await p.evaluate(`import('/dashboard/src/dom.ts').then((dom) => [...dom.breakable(${JSON.stringify(name)}).childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent))`)) as string[];
    expect(pieces.join('')).toBe(name);
    for (const piece of pieces) expect(piece.isWellFormed()).toBe(true);
    expect(pieces[0]).toBe('a'.repeat(23));
  });

  it('uses a 2560×1440 wall screen: wider content and taller charts, a laptop unchanged', async () => {
    const size = async (width: number, height: number): Promise<{ main: number; chart: number }> => {
      const { page: p } = await page({ width, height });
      await p.goto(`${fx.svc().httpUrl}/`);
      await waitLoaded(p);
      return p.evaluate(() => ({ main: (document.querySelector('main') as HTMLElement).getBoundingClientRect().width, chart: (document.querySelector('.chart-box') as HTMLElement).getBoundingClientRect().height }));
    };
    const wall = await size(2560, 1440);
    expect(wall.main).toBeGreaterThan(2200);
    expect(wall.chart).toBeGreaterThan(450);
    expect(await size(1280, 900)).toMatchObject({ chart: 300 });
  });

  it('answers an unknown path with its own 404 page, and keeps heading levels in order', async () => {
    // What a browser sends for a page it opens; a client that asks for JSON gets the API's JSON 404.
    const res = await fetch(`${fx.svc().httpUrl}/nope`, { headers: { accept: 'text/html,*/*;q=0.8' } });
    expect(res.status).toBe(404);
    const html = await res.text();
    expect(html).not.toContain('Cannot GET');
    expect(html).toContain('/dashboard/src/main.ts');
    expect((await fetch(`${fx.svc().httpUrl}/api/v1/nope`)).headers.get('content-type')).toContain('json');
    const { page: p } = await page({ allow: /404/ });
    await p.goto(`${fx.svc().httpUrl}/nope`);
    await p.waitForSelector('#not-found');
    expect(await p.textContent('#not-found h1')).toBe('No such page');
    const id = await hookId('SessionStart:startup');
    for (const path of ['/', `/hooks/${id}`, '/alerts', '/forwarding']) {
      await p.goto(fx.svc().httpUrl + path);
      await waitLoaded(p);
      const levels = await p.$$eval('main h1, main h2, main h3, main h4', (hs) => hs.map((x) => Number(x.tagName.slice(1))));
      expect(levels[0], path).toBe(1);
      for (let i = 1; i < levels.length; i++) expect((levels[i] as number) - (levels[i - 1] as number), `${path}: ${levels.join(' ')}`).toBeLessThanOrEqual(1);
    }
  });

  it('logs no console error on any page, light or dark, desktop or phone', async () => {
    const id = await hookId('SessionStart:startup');
    for (const colorScheme of ['light', 'dark'] as const) {
      for (const viewport of [{ width: 1440, height: 900 }, { width: 390, height: 844 }]) {
        const context = await fx.browser().newContext({ viewport, colorScheme });
        try {
          const p = await context.newPage();
          const errors: string[] = [];
          p.on('console', (m) => void (m.type() === 'error' && errors.push(`${colorScheme} ${viewport.width} ${p.url()}: ${m.text()}`)));
          p.on('pageerror', (e) => errors.push(`${colorScheme} ${viewport.width} ${p.url()}: ${e.message}`));
          for (const path of ['/', `/hooks/${id}`, '/alerts', '/forwarding', '/?range=1h']) {
            await p.goto(fx.svc().httpUrl + path);
            await waitLoaded(p);
          }
          expect(errors).toEqual([]);
        } finally {
          await context.close();
        }
      }
    }
  }, 60_000);
});
