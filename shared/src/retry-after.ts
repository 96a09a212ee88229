/**
 * Retry-After (RFC 9110, 10.2.3), read alike wherever hookwatch is told to wait: by its senders (notifications,
 * forwarding) from the services they send to, and by the dashboard from hookwatch's own 503.
 */

const DAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const MONTH = '(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)';
const TIME = '\\d{2}:\\d{2}:\\d{2}';
/** The three forms of an HTTP-date (RFC 9110, 5.6.7): IMF-fixdate, the obsolete RFC 850 form, asctime (GMT unsaid). */
const HTTP_DATE = [
  new RegExp(`^${DAY}, \\d{2} ${MONTH} \\d{4} ${TIME} GMT$`, 'i'),
  new RegExp(`^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), \\d{2}-${MONTH}-\\d{2} ${TIME} GMT$`, 'i'),
  new RegExp(`^${DAY} ${MONTH} [ \\d]\\d ${TIME} \\d{4}$`, 'i'),
];

/**
 * Retry-After as milliseconds: delta-seconds or an HTTP-date (0 when that date has passed); undefined when
 * absent or anything else. A negative number, a fraction, "NaN" or text with a year in it is not read (JavaScript's
 * Date.parse would take "-30" for a day in 2001 and "soon, by 2031" for 2031), so the sender's own backoff
 * applies, as the OpenTelemetry Collector does. A very large value is returned as it is: callers cap it.
 */
export function parseRetryAfter(value: string | null, nowMs: number): number | undefined {
  if (!value) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const form = HTTP_DATE.findIndex((re) => re.test(v));
  if (form < 0) return undefined;
  const t = Date.parse(form === 2 ? `${v} GMT` : v);
  return Number.isFinite(t) ? Math.max(0, t - nowMs) : undefined;
}
