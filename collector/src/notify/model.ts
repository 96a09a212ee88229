/** What the notify stage receives from alerting, and how receivers are configured. */

/** A receiver as configured under `alerting.receivers` (validated once at load). */
export type { ReceiverConfig, ReceiverTls } from './settings.ts';

/** One alert as a notification carries it. Times are RFC 3339. */
export interface NotifiedAlert {
  id: string;
  fingerprint: string;
  rule: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt: string;
  endsAt: string | null;
  hookId: string | null;
}

/** One notification: one alert transition (or repeat) for one receiver. */
export interface Notification {
  /** Standard Webhooks idempotency key: the same on every attempt of this notification, across restarts. */
  webhookId: string;
  receiver: string;
  status: 'firing' | 'resolved';
  alert: NotifiedAlert;
  createdAtMs: number;
}

/** Renders the request body of a notification for one kind of receiver. */
export interface BodyRenderer {
  render(n: Notification): string;
}

/** Where to link to (the dashboard), from `alerting.externalUrl`. */
export interface LinkContext {
  externalUrl: string;
}

/** Link to a hook on the dashboard, or to the dashboard itself. */
export function dashboardLink(ctx: LinkContext, hookId: string | null): string {
  const base = ctx.externalUrl.replace(/\/+$/, '');
  if (!base) return '';
  return hookId ? `${base}/hooks/${hookId}` : `${base}/alerts`;
}
