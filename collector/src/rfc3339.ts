/** RFC 3339 times as the API and silences take them: the pattern, and a parse that refuses days not on the calendar. */

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

/** Whether the date part of an RFC 3339 time is a day of the calendar (and its hour and minute in range). */
function realDate(v: string): boolean {
  const [y, mo, d, h, mi, s] = v.slice(0, 19).split(/[-Tt:]/).map(Number) as [number, number, number, number, number, number];
  // setUTCFullYear, not Date.UTC: that reads years 0-99 as 1900-1999.
  const day = new Date(0);
  day.setUTCFullYear(y, mo - 1, d);
  return day.getUTCFullYear() === y && day.getUTCMonth() === mo - 1 && day.getUTCDate() === d && h < 24 && mi < 60 && s < 61;
}

/**
 * Milliseconds since the epoch of an RFC 3339 time (2026-11-30T08:00:00Z, lower-case t and z too), or undefined
 * for anything else. Date.parse alone rolls a day that does not exist over (2026-02-30 is 2 March): the calendar
 * date must be real.
 */
export function parseRfc3339(v: string): number | undefined {
  if (!RFC3339.test(v)) return undefined;
  const t = Date.parse(v);
  return Number.isFinite(t) && realDate(v) ? t : undefined;
}

/** An RFC 3339 time in UTC with milliseconds, as the API and notifications write every time. */
export function formatRfc3339(ms: number): string {
  return new Date(ms).toISOString();
}

/** formatRfc3339, null kept: a time that is not known. */
export function formatRfc3339OrNull(ms: number | null): string | null {
  return ms === null ? null : formatRfc3339(ms);
}
