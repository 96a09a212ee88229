import { describe, expect, it } from 'vitest';
import { apiQuery, buildUrl, filterList, keptParams, rangeLabel, readState, refreshMs, routePath, shownValue, widerRange } from './state.ts';
import { setTimeZone } from './format.ts';

const at = (url: string) => {
  const u = new URL(url, 'http://x');
  return readState({ pathname: u.pathname, search: u.search });
};

describe('view state in the URL', () => {
  it('reads page, range and filters, and writes them back the same', () => {
    const s = at('/hooks/0123456789abcdef?range=7d&f.user.id=alice&f.team=platform&by=team');
    expect(s.route).toEqual({ page: 'hook', hookId: '0123456789abcdef' });
    expect(s.range).toEqual({ kind: 'preset', preset: '7d' });
    expect(s.filters).toEqual({ 'user.id': 'alice', team: 'platform' });
    expect(apiQuery(s)).toEqual({ from: 'now-7d', to: 'now', 'user.id': 'alice', team: 'platform' });
    const again = at(buildUrl(routePath(s.route), s, keptParams(s.params)));
    expect(again.route).toEqual(s.route);
    expect(again.range).toEqual(s.range);
    expect(again.filters).toEqual(s.filters);
    expect(again.params.get('by')).toBe('team');
  });

  it('keeps a filter on the empty value, the events without the attribute, and names it "(not set)"', () => {
    const s = at('/hooks/0123456789abcdef?f.team=&f.user.id=alice');
    expect(s.filters).toEqual({ team: '', 'user.id': 'alice' });
    expect(apiQuery(s)).toEqual({ from: 'now-24h', to: 'now', team: '', 'user.id': 'alice' });
    const url = buildUrl(routePath(s.route), s);
    expect(url).toBe('/hooks/0123456789abcdef?range=24h&f.team=&f.user.id=alice');
    expect(at(url).filters).toEqual(s.filters);
    expect(filterList(s.filters)).toBe('team = (not set), user.id = \u2068alice\u2069');
    expect([shownValue(''), shownValue('platform')]).toEqual(['(not set)', 'platform']);
    // A value starting or ending with white space is quoted: "data " does not read as "data".
    expect([shownValue('data '), shownValue('  '), shownValue('a b')]).toEqual(['"data "', '"  "', 'a b']);
    expect(filterList({ team: 'data ' })).toBe('team = \u2068"data "\u2069');
  });

  it('keeps a custom range as absolute times and refuses a backwards one', () => {
    const ok = at('/?range=custom&from=2026-11-01T00:00:00Z&to=2026-11-02T00:00:00Z');
    expect(apiQuery(ok)).toMatchObject({ from: '2026-11-01T00:00:00.000Z', to: '2026-11-02T00:00:00.000Z' });
    expect(at('/?range=custom&from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z').range).toEqual({ kind: 'preset', preset: '24h' });
    expect(at('/?range=90d').range).toEqual({ kind: 'preset', preset: '24h' });
  });

  it('routes unknown paths and malformed hook ids to not-found', () => {
    expect(at('/hooks/XYZ').route).toEqual({ page: 'not-found' });
    expect(at('/nope').route).toEqual({ page: 'not-found' });
    expect(at('/alerts').route).toEqual({ page: 'alerts' });
  });

  it('refreshes every 15 s unless told otherwise, and not at all with a period of zero', () => {
    expect(refreshMs(new URLSearchParams(''))).toBe(15_000);
    expect(refreshMs(new URLSearchParams('refresh=off'))).toBeNull();
    expect(refreshMs(new URLSearchParams('refresh=2m'))).toBe(120_000);
    expect(refreshMs(new URLSearchParams('refresh=1s'))).toBe(1000);
    for (const zero of ['0s', '0m', '0', '00s']) expect(refreshMs(new URLSearchParams(`refresh=${zero}`)), zero).toBeNull();
    for (const bad of ['-5s', '0.5s', '1h', '0x', '']) expect(refreshMs(new URLSearchParams(`refresh=${bad}`)), bad).toBe(15_000);
  });
});

describe('chart buckets', () => {
  it('keeps every preset within 60 buckets, one-minute buckets for the last hour', async () => {
    const { chartStep } = await import('./state.ts');
    expect(chartStep({ kind: 'preset', preset: '1h' })).toBe(60);
    expect(chartStep({ kind: 'preset', preset: '24h' })).toBe(1800);
    expect(chartStep({ kind: 'preset', preset: '7d' })).toBe(10_800);
    expect(chartStep({ kind: 'preset', preset: '30d' })).toBe(86_400);
  });
});

describe('range labels', () => {
  it('writes a custom range in the page\'s date format and zone, not as raw timestamps', () => {
    setTimeZone('UTC');
    try {
      expect(rangeLabel({ kind: 'custom', from: '2026-12-01T21:00:00.000Z', to: '2026-12-02T03:30:00.000Z' })).toBe('01/12/2026, 21:00 to 02/12/2026, 03:30 UTC');
      expect(rangeLabel({ kind: 'preset', preset: '7d' })).toBe('last 7 days');
    } finally {
      setTimeZone('local');
    }
  });
});

describe('zooming out', () => {
  const now = Date.parse('2026-11-30T08:30:00Z');
  it('widens a preset to the next, and stops at the widest', () => {
    expect(widerRange({ kind: 'preset', preset: '1h' }, now)).toEqual({ kind: 'preset', preset: '24h' });
    expect(widerRange({ kind: 'preset', preset: '7d' }, now)).toEqual({ kind: 'preset', preset: '30d' });
    expect(widerRange({ kind: 'preset', preset: '30d' }, now)).toBeUndefined();
  });

  it('doubles a custom range around its middle, never past now, up to a year', () => {
    expect(widerRange({ kind: 'custom', from: '2026-11-20T10:00:00.000Z', to: '2026-11-20T12:00:00.000Z' }, now))
      .toEqual({ kind: 'custom', from: '2026-11-20T09:00:00.000Z', to: '2026-11-20T13:00:00.000Z' });
    expect(widerRange({ kind: 'custom', from: '2026-11-30T06:00:00.000Z', to: '2026-11-30T08:00:00.000Z' }, now))
      .toEqual({ kind: 'custom', from: '2026-11-30T04:30:00.000Z', to: '2026-11-30T08:30:00.000Z' });
    expect(widerRange({ kind: 'custom', from: '2025-01-01T00:00:00.000Z', to: '2026-01-01T00:00:00.000Z' }, now)).toBeUndefined();
  });
});
