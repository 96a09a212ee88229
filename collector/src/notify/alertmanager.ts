/**
 * The Alertmanager webhook body, version "4", so existing Alertmanager webhook consumers work unchanged.
 * hookwatch sends one alert per notification (no group_wait): the point is minutes, not batching.
 */
import { dashboardLink, type BodyRenderer, type LinkContext, type Notification } from './model.ts';

/** Alertmanager's "no end yet" time for firing alerts. */
const ZERO_TIME = '0001-01-01T00:00:00Z';

/** The v4 webhook payload shape. */
export interface AlertmanagerWebhookBody {
  version: '4';
  groupKey: string;
  truncatedAlerts: number;
  status: 'firing' | 'resolved';
  receiver: string;
  groupLabels: Record<string, string>;
  commonLabels: Record<string, string>;
  commonAnnotations: Record<string, string>;
  externalURL: string;
  alerts: {
    status: 'firing' | 'resolved';
    labels: Record<string, string>;
    annotations: Record<string, string>;
    startsAt: string;
    endsAt: string;
    generatorURL: string;
    fingerprint: string;
  }[];
}

/** Builds the v4 body for one notification. */
export function alertmanagerBody(n: Notification, ctx: LinkContext): AlertmanagerWebhookBody {
  const a = n.alert;
  const groupLabels = { alertname: a.labels['alertname'] ?? a.rule };
  return {
    version: '4',
    groupKey: `{}:{alertname=${JSON.stringify(groupLabels.alertname)}, fingerprint=${JSON.stringify(a.fingerprint)}}`,
    truncatedAlerts: 0,
    status: n.status,
    receiver: n.receiver,
    groupLabels,
    commonLabels: a.labels,
    commonAnnotations: a.annotations,
    externalURL: ctx.externalUrl,
    alerts: [{
      status: n.status,
      labels: a.labels,
      annotations: a.annotations,
      startsAt: a.startsAt,
      endsAt: n.status === 'resolved' && a.endsAt ? a.endsAt : ZERO_TIME,
      generatorURL: dashboardLink(ctx, a.hookId),
      fingerprint: a.fingerprint,
    }],
  };
}

/** Renderer for `type: webhook` receivers. */
export function alertmanagerRenderer(ctx: LinkContext): BodyRenderer {
  return { render: (n) => JSON.stringify(alertmanagerBody(n, ctx)) };
}
