import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DeadLetterSummaryInfo, ForwardingDestination } from '../../../shared/src/api.ts';
import { setTimeZone } from '../format.ts';
import { age, deadLetterRows, deadLetterSummaryView, destinationView, replayNote } from './forwarding-state.ts';

/** The downstream collector has been down for four minutes: the queue backs off and grows. */
const down: ForwardingDestination = {
  destination: 'http://otel-collector:4318', state: 'backing_off', depth: 37, bytes: 8_519_680, maxBytes: 268_435_456,
  oldestAgeMs: 250_400, delivered: 1_204, retries: 9, deadLetters: 1, refusedFull: 0, rejectedByDestination: 0, consecutiveFailures: 9,
  lastError: 'connect ECONNREFUSED 10.0.0.7:4318', lastSuccessAt: '2026-11-30T08:26:00.000Z', nextAttemptAt: '2026-11-30T08:30:08.000Z',
  attemptStartedAt: null,
};
const idle: ForwardingDestination = {
  ...down, state: 'idle', depth: 0, bytes: 0, oldestAgeMs: null, retries: 0, deadLetters: 0, consecutiveFailures: 0,
  lastError: null, lastSuccessAt: null, nextAttemptAt: null, delivered: 0, maxBytes: 0,
};
const summary: DeadLetterSummaryInfo = {
  count: 3, bytes: 3_300, maxBytes: 67_108_864, oldestFailedAt: '2026-11-30T07:00:00.000Z', lastReason: 'HTTP 400: invalid resource attribute',
  evicted: 0, expired: 0, replayed: 0,
};

beforeEach(() => setTimeZone('UTC'));
afterEach(() => setTimeZone('local'));

describe('a destination', () => {
  it('raises the alarm while it backs off, with the next attempt and the last error', () => {
    const v = destinationView(down);
    expect(v.alarm).toBe(true);
    expect(v.state.join('')).toBe('State: waiting to retry (next attempt 30/11/2026, 08:30:08) · last error: connect ECONNREFUSED 10.0.0.7:4318');
    expect(v.figures.map((f) => [f.id, f.value, f.note])).toEqual([
      ['depth', '37', undefined],
      ['bytes', '8.1 MiB', '3.2% of 256 MiB; full means clients get 503'],
      ['oldest', '4 min 10 s', undefined],
      ['delivered', '1,204', 'last 30/11/2026, 08:26'],
      ['retries', '9', '9 failures in a row'],
      ['dead-letters', '1', 'refused for good by the destination'],
      ['refused-full', '0', undefined],
    ]);
    expect(destinationView({ ...down, rejectedByDestination: 3 }).figures.at(-1)).toEqual({ id: 'rejected', label: 'Records rejected downstream', value: '3', note: 'in requests it accepted (partial success); see the log for why' });
  });

  it('says an attempt is in flight, and since when, instead of when the one before was due', () => {
    const sending: ForwardingDestination = { ...down, state: 'sending', nextAttemptAt: null, attemptStartedAt: '2026-11-30T08:30:09.000Z' };
    const v = destinationView(sending);
    expect(v.alarm).toBe(false);
    expect(v.state.join('')).toBe('State: sending (attempt in flight since 30/11/2026, 08:30:09) · last error: connect ECONNREFUSED 10.0.0.7:4318');
  });

  it('reads an idle, never-used queue without dividing by zero', () => {
    const v = destinationView(idle);
    expect(v.alarm).toBe(false);
    expect(v.state.join('')).toBe('State: up to date');
    expect(v.figures.find((f) => f.id === 'bytes')?.note).toBe('0.0% of 0 B; full means clients get 503');
    expect(v.figures.find((f) => f.id === 'oldest')?.value).toBe('none');
    expect(v.figures.find((f) => f.id === 'delivered')?.note).toBe('none yet');
    expect(v.figures.find((f) => f.id === 'retries')?.note).toBeUndefined();
  });

  it('words ages from seconds to days', () => {
    expect(age(0)).toBe('0 s');
    expect(age(59_400)).toBe('59 s');
    expect(age(3_599_000)).toBe('59 min 59 s');
    expect(age(3_600_000 + 61_000)).toBe('1 h 1 min');
    expect(age(2 * 86_400_000 + 5 * 3_600_000)).toBe('2 d 5 h');
  });
});

describe('dead letters', () => {
  it('lists them with a dash for no HTTP status, and nothing when there are none', () => {
    expect(deadLetterRows([
      { id: 1, signal: 'logs', bytes: 1_100, receivedAt: '2026-11-30T07:00:00.000Z', failedAt: '2026-11-30T07:00:02.000Z', attempts: 1, status: 400, reason: 'HTTP 400: invalid' },
      { id: 2, signal: 'traces', bytes: 2_048, receivedAt: '2026-11-30T07:10:00.000Z', failedAt: '2026-11-30T08:10:00.000Z', attempts: 31, status: null, reason: 'gave up after 1h' },
    ])).toEqual([
      ['logs', '1.1 KiB', '30/11/2026, 07:00', '30/11/2026, 07:00', '1', '400', 'HTTP 400: invalid'],
      ['traces', '2.0 KiB', '30/11/2026, 07:10', '30/11/2026, 08:10', '31', '–', 'gave up after 1h'],
    ]);
    expect(deadLetterRows([])).toBeNull();
  });

  it('sums them up and offers Replay only when there is something to replay', () => {
    expect(deadLetterSummaryView(summary)).toEqual({
      held: '3', evicted: null, size: '3.2 KiB', sizeNote: '0.0% of 64 MiB; over it the oldest go', oldest: '30/11/2026, 07:00',
      lastRefusal: 'Last refusal: HTTP 400: invalid resource attribute', canReplay: true,
    });
    const empty = deadLetterSummaryView({ ...summary, count: 0, bytes: 0, oldestFailedAt: null, lastReason: null, evicted: 2 });
    expect(empty).toMatchObject({ canReplay: false, oldest: 'none', lastRefusal: null, evicted: '2 evicted over the bound' });
  });

  it('says what a replay did, in the singular too, and what is left', () => {
    expect(replayNote({ replayed: 1, remaining: 0 })).toBe('Requeued 1 dead letter.');
    expect(replayNote({ replayed: 0, remaining: 0 })).toBe('Requeued 0 dead letters.');
    expect(replayNote({ replayed: 1_000, remaining: 24 })).toBe('Requeued 1,000 dead letters. 24 stay dead letters until the queue has room; replay again later.');
  });
});
