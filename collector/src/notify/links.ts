/** Links from notifications to the dashboard. */
import { HOOK_PARAM, alertPagePath, alertRange, hookDataExpired, type AlertTimes } from '../../../shared/src/alert-range.ts';
import { silenceQuery } from '../../../shared/src/silence-link.ts';
import type { LinkContext, Notification } from './model.ts';

/**
 * externalUrl as notifications give it: without the user name and password the URL may hold
 * (`https://user:pass@hookwatch.example`, for a proxy in front of the dashboard), which would otherwise reach every
 * chat channel and receiver a notification goes to (a browser asks for them when the link is opened), and without
 * a query or fragment (`?token=`, as secret), which the paths of links cannot follow. '' when there is no
 * dashboard to link to, or the URL does not read (the configuration refuses such a one).
 */
export function externalUrlOf(ctx: LinkContext): string {
  if (ctx.externalUrl === '') return '';
  let url: URL;
  try {
    url = new URL(ctx.externalUrl);
  } catch {
    return '';
  }
  if (url.username === '' && url.password === '' && url.search === '' && url.hash === '' && !/[?#]/.test(ctx.externalUrl)) return ctx.externalUrl;
  url.username = '';
  url.password = '';
  url.search = '';
  url.hash = '';
  return url.toString();
}

/** externalUrlOf without its trailing slashes; '' when there is no dashboard to link to. */
export function baseUrl(ctx: LinkContext): string {
  return externalUrlOf(ctx).replace(/\/+$/, '');
}

/**
 * Link to the dashboard for an alert: its hook's page over the alert's time range (alert-range.ts), as of `atMs`
 * while it fires, so the page shows the outputs the alert counted, late ones included; for a quiet feed's alert
 * (`scope: feed`) the overview over that range, from before the feed's last event; the alerts page for any other
 * alert of no single hook. An alert that ended because retention removed its hook's data (hookDataExpired) links to
 * the alerts page filtered to that hook over the same range, where it is listed: the hook's page says "No such hook".
 */
export function dashboardLink(ctx: LinkContext, alert: AlertTimes & { hookId: string | null; labels: Record<string, string> }, atMs: number): string {
  const base = baseUrl(ctx);
  if (!base) return '';
  const path = alertPagePath(alert);
  if (path === null) return `${base}/alerts`;
  const { from, to } = alertRange(alert, atMs);
  const query = new URLSearchParams({ range: 'custom', from, to });
  if (alert.hookId && hookDataExpired(alert)) {
    query.set(HOOK_PARAM, alert.hookId);
    return `${base}/alerts?${query.toString()}`;
  }
  return `${base}${path}?${query.toString()}`;
}

/**
 * Link to the alerts page's silence form prefilled with the alert's labels (silence-link.ts), as Alertmanager's
 * "Silence" button: for a firing notification only (a resolved alert needs no silence; a test one is of no rule);
 * '' otherwise, or when there is no dashboard to link to, as for dashboardLink.
 */
export function silenceLink(ctx: LinkContext, n: Pick<Notification, 'status' | 'test' | 'alert'>): string {
  const base = baseUrl(ctx);
  return base && n.status === 'firing' && !n.test ? `${base}/alerts?${silenceQuery(n.alert.labels)}` : '';
}
