/**
 * What `hookwatch guard` did for a hook, on the hook page: the largest trimmed output (what the hook sent and
 * what the model got instead) beside Claude Code's own counters, and on the cliff chart the guarded outputs
 * landing under the cap instead of on the ~2,000-character preview.
 */
import type { ChartConfiguration } from 'chart.js';
import type { SeriesResponse } from '../../shared/src/api.ts';
import type { GuardTrimsResponse } from '../../shared/src/guard-trims.ts';
import { ApiFailure, api, type Query } from './api.ts';
import { h } from './dom.ts';
import { guardTrimsView } from './pages/hook-state.ts';

/** Okabe-Ito black and grey: apart from every kind colour and the cap. */
const SENT_COLOR = '#999999';
const KEPT_COLOR = '#000000';

/**
 * The hook's guard trims over the page's range; null when the server cannot say (an older hookwatch, or one that
 * fails to answer this): the rest of the page does not depend on it. Signed out, the whole page is, said once in
 * its banner: that failure is thrown, as an abort is.
 */
export async function loadGuardTrims(hookId: string, q: Query, signal?: AbortSignal): Promise<GuardTrimsResponse | null> {
  // The route takes the range and step only: one left empty is not sent, as a filter's empty value would be.
  const query: Query = {};
  for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== '') query[k] = v;
  try {
    return await api.guardTrims(hookId, query, signal);
  } catch (err) {
    if (!(err instanceof ApiFailure) || err.signedOut) throw err;
    return null;
  }
}

/**
 * The KPI beside Claude Code's counters: "trimmed by guard: sent 15,000, delivered 9,500"; null when nothing was
 * trimmed. `unfiltered`: what it says on a page narrowed by filters, which guard trims do not follow.
 */
export function guardTrimsKpi(g: GuardTrimsResponse | null, unfiltered: string | null = null): HTMLElement | null {
  const v = guardTrimsView(g);
  if (!v) return null;
  return h('div', { class: 'kpi', 'data-kpi': 'guard-trims' },
    h('div', { class: 'kpi-label' }, 'Trimmed by guard'),
    h('div', { class: 'kpi-value' }, v.value),
    h('div', { class: 'kpi-note', 'data-guard-largest': v.field }, v.note),
    h('div', { class: 'kpi-note' }, 'instead of a ~2,000-character preview'),
    unfiltered === null ? null : h('div', { class: 'kpi-note warn', id: 'guard-trims-not-filtered' }, unfiltered),
  );
}

/** Adds the guarded outputs to the cliff chart: largest sent per bucket (over the cap) and what was delivered (under it). */
export function addGuardTrimsToCliff(config: ChartConfiguration, series: SeriesResponse, g: GuardTrimsResponse | null): void {
  if (!g || g.trims === 0) return;
  const byStart = new Map(g.buckets.map((b) => [Date.parse(b.start), b]));
  const at = series.buckets.map((b) => byStart.get(Date.parse(b.start)));
  config.data.datasets.push(
    {
      label: 'guarded: sent by the hook', data: at.map((b) => b?.maxSentChars ?? null), showLine: false, pointStyle: 'rectRot', pointRadius: 6,
      borderColor: SENT_COLOR, backgroundColor: 'transparent', borderWidth: 2,
    },
    {
      label: 'guarded: delivered', data: at.map((b) => b?.maxKeptChars ?? null), showLine: false, pointStyle: 'rectRot', pointRadius: 6,
      borderColor: KEPT_COLOR, backgroundColor: KEPT_COLOR,
    },
  );
}
