/**
 * The link from a notification to a silence of its alert, as Alertmanager's "Silence" button opens its silence
 * form prefilled with the alert's labels: the alerts page with `silence.<label>=<value>` for each label. The
 * page shows the silence form with those equality matchers, focused; opening the link creates nothing: the
 * person picks a duration, gives a reason and their name, and confirms.
 */

/** Prefix of the query parameters that carry the matchers, clear of the page's own keys (and of `f.` filters). */
export const SILENCE_PARAM = 'silence.';

/** The query string (no `?`) for a silence of an alert with these labels. */
export function silenceQuery(labels: Record<string, string>): string {
  return new URLSearchParams(Object.entries(labels).map(([k, v]) => [`${SILENCE_PARAM}${k}`, v])).toString();
}

/** The labels a silence link carries, in its order (a label given twice: its last value); none when the URL is no silence link. */
export function silenceLabels(params: URLSearchParams): [string, string][] {
  const labels = new Map<string, string>();
  for (const [k, v] of params) if (k.startsWith(SILENCE_PARAM) && k.length > SILENCE_PARAM.length) labels.set(k.slice(SILENCE_PARAM.length), v);
  return [...labels];
}
