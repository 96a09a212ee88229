/** Number, size and time formatting: one place, so the same value reads the same on every page. */
import type { DeliveryStatus } from '../../shared/src/cliff.ts';
import { h } from './dom.ts';

const NUM = new Intl.NumberFormat('en-US');

/** 12,345, or "unknown" for null: unknown is never shown as zero. */
export function num(n: number | null | undefined): string {
  return n === null || n === undefined ? 'unknown' : NUM.format(Math.round(n));
}

/** Characters: "12,000 chars" or "unknown". */
export function chars(n: number | null | undefined): string {
  return n === null || n === undefined ? 'unknown' : `${NUM.format(Math.round(n))} chars`;
}

/** A 0..1 share as "97.5%", or "unknown". */
export function pct(share: number | null | undefined): string {
  if (share === null || share === undefined) return 'unknown';
  return `${(Math.round(share * 1000) / 10).toFixed(1)}%`;
}


const DATE_TIME = new Intl.DateTimeFormat('en-GB', { year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', hour12: false });
const SHORT = new Intl.DateTimeFormat('en-GB', { month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', hour12: false });
const DAY = new Intl.DateTimeFormat('en-GB', { year: 'numeric', month: '2-digit', day: '2-digit' });

/** A full local date and time. */
export function dateTime(iso: string | number | null): string {
  if (iso === null) return 'never';
  return DATE_TIME.format(new Date(iso));
}

/** A bucket label that fits the bucket width. */
export function bucketLabel(iso: string, stepSeconds: number): string {
  return stepSeconds >= 86_400 ? DAY.format(new Date(iso)) : SHORT.format(new Date(iso));
}

/** A date only. */
export function day(ms: number): string {
  return DAY.format(new Date(ms));
}

/** "3 min ago" style age. */
export function ago(iso: string | null, now = Date.now()): string {
  if (iso === null) return 'never';
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86_400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86_400)} d ago`;
}

const STATUS_TEXT: Record<DeliveryStatus, string> = { over: 'over', near: 'near', ok: 'ok', unknown: 'unknown' };
const STATUS_TITLE: Record<DeliveryStatus, string> = {
  over: 'outputs were persisted: over the 10,000-character cap, the model saw a ~2,000-character preview',
  near: 'the largest output may be close to the cap',
  ok: 'every output was delivered whole',
  unknown: 'no size data (client older than 2.1.280): not measurable, never assumed healthy',
};

/** A status badge whose meaning is in the text, not only the colour. */
export function statusBadge(status: DeliveryStatus | null): HTMLSpanElement {
  const s = status ?? 'unknown';
  return h('span', { class: `status status-${s}`, title: STATUS_TITLE[s] }, STATUS_TEXT[s]);
}
