/**
 * Splits a time range into whole days, hours and minutes so a long range reads a few day rollups plus the
 * hour and minute rollups at its edges, exact to the minute. Rollup buckets are UTC-aligned.
 */
export const MINUTE = 60_000;
export const HOUR = 3_600_000;
export const DAY = 86_400_000;

export type Granularity = 'minute' | 'hour' | 'day';

export interface Segment {
  granularity: Granularity;
  /** Bucket starts in [fromMs, toMs). */
  fromMs: number;
  toMs: number;
}

const SIZE: Record<Granularity, number> = { minute: MINUTE, hour: HOUR, day: DAY };

export function granularityMs(g: Granularity): number {
  return SIZE[g];
}

/** Minute-aligned range: from rounded down, to rounded up. */
export function alignRange(fromMs: number, toMs: number): { fromMs: number; toMs: number } {
  return { fromMs: Math.floor(fromMs / MINUTE) * MINUTE, toMs: Math.ceil(toMs / MINUTE) * MINUTE };
}

/**
 * Tiles [from, to) (aligned to the minute) with as few rollup reads as possible: minutes up to the first hour,
 * hours up to the first day, days, then hours and minutes again. With `openFrom` (a minute boundary: the start of
 * the minute still being written), one minute segment covers time from `openFrom` on and every other segment
 * ends at or before it, so their rows can be kept until an event for their time arrives.
 */
export function segments(fromMsRaw: number, toMsRaw: number, openFrom?: number): Segment[] {
  const { fromMs, toMs } = alignRange(fromMsRaw, toMsRaw);
  if (toMs <= fromMs) return [];
  if (openFrom !== undefined && openFrom < toMs) {
    if (openFrom % MINUTE !== 0) throw new RangeError('openFrom must be a minute boundary');
    if (openFrom <= fromMs) return [{ granularity: 'minute', fromMs, toMs }];
    return [...segments(fromMs, openFrom), { granularity: 'minute', fromMs: openFrom, toMs }];
  }
  const out: Segment[] = [];
  const ceil = (t: number, s: number): number => Math.ceil(t / s) * s;
  const floor = (t: number, s: number): number => Math.floor(t / s) * s;
  const push = (granularity: Granularity, a: number, b: number): void => {
    if (b > a) out.push({ granularity, fromMs: a, toMs: b });
  };
  const dayStart = ceil(fromMs, DAY);
  const dayEnd = floor(toMs, DAY);
  if (dayEnd > dayStart) {
    const hourStartA = ceil(fromMs, HOUR);
    push('minute', fromMs, Math.min(hourStartA, dayStart));
    push('hour', Math.min(hourStartA, dayStart), dayStart);
    push('day', dayStart, dayEnd);
    const hourEndB = floor(toMs, HOUR);
    push('hour', dayEnd, Math.max(hourEndB, dayEnd));
    push('minute', Math.max(hourEndB, dayEnd), toMs);
    return out;
  }
  const hourStart = ceil(fromMs, HOUR);
  const hourEnd = floor(toMs, HOUR);
  if (hourEnd > hourStart) {
    push('minute', fromMs, hourStart);
    push('hour', hourStart, hourEnd);
    push('minute', hourEnd, toMs);
    return out;
  }
  push('minute', fromMs, toMs);
  return out;
}

/**
 * SQL of the start of the bucket of `step` (a positive whole number, or an SQL expression of one) holding the
 * integer `expr`: Math.floor(expr / step) * step, as ingest buckets the rollups. Integer division in SQLite and
 * PostgreSQL rounds toward zero, so `(expr / step) * step` put a time before 1970 one bucket late.
 */
export function floorSql(expr: string, step: number | string): string {
  return `(${expr} - ((${expr} % ${step}) + ${step}) % ${step})`;
}

/** Refuses a series step that is not a positive whole number of ms: it is written into the SQL. */
export function checkStep(stepMs: number): void {
  if (!Number.isSafeInteger(stepMs) || stepMs <= 0) throw new RangeError('series step must be a positive whole number of ms');
}

/** The rollup table that serves a series step: the coarsest whose bucket divides the step. */
export function granularityForStep(stepMs: number): Granularity {
  if (stepMs % DAY === 0) return 'day';
  if (stepMs % HOUR === 0) return 'hour';
  return 'minute';
}
