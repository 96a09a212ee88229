/** The generated history has the shape the store benchmark and the read tests rely on. */
import { describe, expect, it } from 'vitest';
import { HISTORY_VERSIONS, historyBatches, historyHooks } from './history.ts';

const DAY = 86_400_000;

describe('generated history', () => {
  it('holds exactly the events asked for, in range, in sessions, over every team, hook and client version; the same each time', () => {
    const shape = { events: 20_000, fromMs: Date.UTC(2026, 0, 1), toMs: Date.UTC(2026, 0, 31) };
    const events = [...historyBatches(shape, 3000)].flat();
    expect(events).toHaveLength(20_000);
    expect(new Set(events.map((e) => e.dedupKey)).size).toBe(20_000);
    expect(events.every((e) => e.timeMs >= shape.fromMs && e.timeMs < shape.toMs)).toBe(true);
    const sessions = new Map<string, number>();
    for (const e of events) sessions.set(e.sessionId, (sessions.get(e.sessionId) ?? 0) + 1);
    const perSession = events.length / sessions.size;
    expect(perSession).toBeGreaterThan(150);
    expect(perSession).toBeLessThan(250);
    expect(new Set(events.map((e) => e.extra['team']))).toEqual(new Set(Array.from({ length: 8 }, (_, i) => `team-${i}`)));
    expect(new Set(events.map((e) => e.serviceVersion))).toEqual(new Set(HISTORY_VERSIONS));
    // The oldest client sends no sizes: unknown, never healthy.
    expect(events.filter((e) => e.serviceVersion === HISTORY_VERSIONS.at(-1)).every((e) => !e.sizesKnown && e.status === 'unknown')).toBe(true);
    expect(events.some((e) => e.status === 'over') && events.some((e) => e.status === 'near')).toBe(true);
    const hooks = new Set(historyHooks().map((h) => h.id));
    expect(events.every((e) => hooks.has(e.hookId))).toBe(true);
    // One user per session, picked from 500 (some more often).
    expect(new Set(events.map((e) => e.userId)).size).toBeGreaterThan(sessions.size / 2);
    // Deterministic for a seed; another seed is another history.
    expect([...historyBatches(shape, 3000)].flat().map((e) => e.dedupKey)).toEqual(events.map((e) => e.dedupKey));
    expect([...historyBatches({ ...shape, seed: 2 }, 3000)].flat()[0]?.dedupKey).not.toBe(events[0]?.dedupKey);
    expect(shape.toMs - shape.fromMs).toBe(30 * DAY);
  });
});
