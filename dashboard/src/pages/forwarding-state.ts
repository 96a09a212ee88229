/**
 * The forwarding page's state, without the DOM: each destination's queue in words and figures, the dead letters
 * and what a replay answered. Unit-tested in Node against API-shaped responses.
 */
import type { DeadLetterInfo, DeadLetterSummaryInfo, ForwardingDestination, ReplayResponse } from '../../../shared/src/api.ts';
import { bytes, dateTime, dateTimeSeconds, num } from '../format.ts';

const STATE_TEXT: Record<ForwardingDestination['state'], string> = {
  idle: 'up to date',
  sending: 'sending',
  backing_off: 'waiting to retry',
  stopped: 'stopped',
};

/** "4 min 10 s"-style durations; "none" for null. */
export function age(ms: number | null): string {
  if (ms === null) return 'none';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3600)} h`;
}

export interface Figure {
  id: string;
  label: string;
  value: string;
  note?: string | undefined;
}

/** "12.5% of 64.0 MiB": how full a bounded store is. */
function share(used: number, max: number): string {
  const full = max > 0 ? used / max : 0;
  return `${(full * 100).toFixed(1)}% of ${bytes(max)}`;
}

/** One destination: its state line (an alarm while it backs off) and its queue's figures. */
export function destinationView(d: ForwardingDestination): { alarm: boolean; state: string[]; figures: Figure[] } {
  return {
    alarm: d.state === 'backing_off',
    state: [`State: ${STATE_TEXT[d.state]}`, d.attemptStartedAt ? ` (attempt in flight since ${dateTimeSeconds(d.attemptStartedAt)})` : d.nextAttemptAt ? ` (next attempt ${dateTimeSeconds(d.nextAttemptAt)})` : '', d.lastError ? ` · last error: ${d.lastError}` : ''],
    figures: [
      { id: 'depth', label: 'Queued requests', value: num(d.depth) },
      { id: 'bytes', label: 'Queue size', value: bytes(d.bytes), note: `${share(d.bytes, d.maxBytes)}; full means clients get 503` },
      { id: 'oldest', label: 'Oldest waiting', value: age(d.oldestAgeMs) },
      { id: 'delivered', label: 'Delivered', value: num(d.delivered), note: d.lastSuccessAt ? `last ${dateTime(d.lastSuccessAt)}` : 'none yet' },
      { id: 'retries', label: 'Retries', value: num(d.retries), note: d.consecutiveFailures ? `${num(d.consecutiveFailures)} failures in a row` : undefined },
      { id: 'dead-letters', label: 'Dead letters', value: num(d.deadLetters), note: 'refused for good by the destination' },
      { id: 'refused-full', label: 'Refused (queue full)', value: num(d.refusedFull) },
      // Only when it happened: a destination that drops records of requests it accepted says so in its answer.
      ...(d.rejectedByDestination > 0
        ? [{ id: 'rejected', label: 'Records rejected downstream', value: num(d.rejectedByDestination), note: 'in requests it accepted (partial success); see the log for why' }]
        : []),
    ],
  };
}

/** The recent dead letters table's rows; null when there are none. */
export function deadLetterRows(letters: readonly DeadLetterInfo[]): string[][] | null {
  if (letters.length === 0) return null;
  return letters.map((d) => [d.signal, bytes(d.bytes), dateTime(d.receivedAt), dateTime(d.failedAt), num(d.attempts), d.status === null ? '–' : String(d.status), d.reason]);
}

/** The dead letters panel: held, size against the bound, oldest, last refusal; Replay only when there is something to replay. */
export function deadLetterSummaryView(s: DeadLetterSummaryInfo): {
  held: string; evicted: string | null; size: string; sizeNote: string; oldest: string; lastRefusal: string | null; canReplay: boolean;
} {
  return {
    held: num(s.count),
    evicted: s.evicted ? `${num(s.evicted)} evicted over the bound` : null,
    size: bytes(s.bytes),
    sizeNote: `${share(s.bytes, s.maxBytes)}; over it the oldest go`,
    oldest: s.oldestFailedAt ? dateTime(s.oldestFailedAt) : 'none',
    lastRefusal: s.lastReason ? `Last refusal: ${s.lastReason}` : null,
    canReplay: s.count > 0,
  };
}

/** What the Replay button answered last, so the note survives the page's periodic redraw. */
export function replayNote(r: ReplayResponse): string {
  const left = r.remaining ? ` ${num(r.remaining)} stay dead letters until the queue has room; replay again later.` : '';
  return `Requeued ${num(r.replayed)} dead letter${r.replayed === 1 ? '' : 's'}.${left}`;
}
