/**
 * The Alertmanager webhook body, version "4", so existing Alertmanager webhook consumers work unchanged.
 * hookwatch sends one alert per notification (no group_wait): the point is minutes, not batching.
 */
import { dashboardLink, externalUrlOf, silenceLink } from './links.ts';
import type { BodyRenderer, LinkContext, Notification } from './model.ts';

/** Alertmanager's "no end yet" time for firing alerts. */
const ZERO_TIME = '0001-01-01T00:00:00Z';

const FNV_OFFSET = 0xcbf29ce484222325n;
const FNV_PRIME = 0x100000001b3n;
const MASK_64 = 0xffffffffffffffffn;

/**
 * The fingerprint Alertmanager gives a label set (prometheus/common model.LabelSet.Fingerprint: 64-bit FNV-1a over
 * the names in byte order, each name and value followed by 0xff), as 16 hex digits. A webhook consumer that also
 * hears from Alertmanager can then tell it is the same alert. hookwatch's own alert key (lifecycle.ts) is another
 * hash, kept so stored alerts keep their identity.
 */
export function alertmanagerFingerprint(labels: Record<string, string>): string {
  const names = Object.keys(labels).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  let h = FNV_OFFSET;
  const add = (bytes: Uint8Array): void => {
    for (const b of bytes) h = ((h ^ BigInt(b)) * FNV_PRIME) & MASK_64;
  };
  const separator = Uint8Array.of(0xff);
  for (const name of names) {
    add(Buffer.from(name));
    add(separator);
    add(Buffer.from(labels[name] ?? ''));
    add(separator);
  }
  return h.toString(16).padStart(16, '0');
}

/**
 * An alert's labels as they leave hookwatch: with alerting.externalLabels added, as Prometheus adds its
 * `external_labels` to the alerts it sends. The alert's own labels win, as in Prometheus (the configuration
 * refuses an external label an alert carries itself, so none is lost).
 */
export function withExternalLabels(labels: Record<string, string>, external: Readonly<Record<string, string>>): Record<string, string> {
  return Object.keys(external).length === 0 ? labels : { ...external, ...labels };
}

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

/**
 * The annotation that links a firing alert to the dashboard's silence form prefilled with its labels (links.ts),
 * where a consumer's template reads links such as `runbook_url`: the v4 schema has no field for it.
 */
const SILENCE_URL_ANNOTATION = 'silence_url';

/**
 * Builds the v4 body for one notification. External labels are in each alert's labels and in the group's: the
 * group is this hookwatch's alone, as an Alertmanager grouping by them (`group_by: [alertname, env]`) keeps
 * deployments apart, so the fingerprint and the groupKey of two deployments' alerts of one hook differ.
 */
export function alertmanagerBody(n: Notification, ctx: LinkContext, externalLabels: Readonly<Record<string, string>> = {}): AlertmanagerWebhookBody {
  const a = n.alert;
  const labels = withExternalLabels(a.labels, externalLabels);
  const groupLabels = sortedLabels({ ...externalLabels, alertname: a.labels['alertname'] ?? a.rule });
  const fingerprint = alertmanagerFingerprint(labels);
  // To the silence form of hookwatch, whose silences match the labels hookwatch sets: without external labels.
  const silence = silenceLink(ctx, n);
  // One alert: its annotations are the group's common ones.
  const annotations = silence ? { ...a.annotations, [SILENCE_URL_ANNOTATION]: silence } : a.annotations;
  return {
    version: '4',
    // Keyed by hookwatch's own alert key after the group's labels in byte order: with external labels two
    // deployments' keys differ (and setting or changing them re-keys the alerts already firing).
    groupKey: `{}:{${Object.entries(groupLabels).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(', ')}, fingerprint=${JSON.stringify(a.fingerprint)}}`,
    truncatedAlerts: 0,
    status: n.status,
    receiver: n.receiver,
    groupLabels,
    commonLabels: labels,
    commonAnnotations: annotations,
    externalURL: externalUrlOf(ctx),
    alerts: [{
      status: n.status,
      labels,
      annotations,
      startsAt: a.startsAt,
      endsAt: n.status === 'resolved' && a.endsAt ? a.endsAt : ZERO_TIME,
      generatorURL: dashboardLink(ctx, a, n.createdAtMs),
      fingerprint,
    }],
  };
}

/** Labels by name, in byte order, as Alertmanager writes a label set. */
function sortedLabels(labels: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** Renderer for `type: webhook` receivers. */
export function alertmanagerRenderer(ctx: LinkContext, externalLabels: Readonly<Record<string, string>> = {}): BodyRenderer {
  return { render: (n) => JSON.stringify(alertmanagerBody(n, ctx, externalLabels)) };
}
