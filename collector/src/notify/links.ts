/** Links from notifications to the dashboard. */
import { alertRange, type AlertTimes } from '../../../shared/src/alert-range.ts';
import type { LinkContext } from './model.ts';

/**
 * Link to the dashboard for an alert: its hook's page over the alert's time range (alert-range.ts), as of `atMs`
 * while it fires, so the page shows the outputs the alert counted, late ones included; the alerts page for an
 * alert of no single hook.
 */
export function dashboardLink(ctx: LinkContext, alert: AlertTimes & { hookId: string | null }, atMs: number): string {
  const base = ctx.externalUrl.replace(/\/+$/, '');
  if (!base) return '';
  if (!alert.hookId) return `${base}/alerts`;
  const { from, to } = alertRange(alert, atMs);
  return `${base}/hooks/${alert.hookId}?${new URLSearchParams({ range: 'custom', from, to }).toString()}`;
}
