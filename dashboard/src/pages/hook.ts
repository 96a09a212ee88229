/**
 * One hook over the chosen range: the cliff over time (largest output per bucket per string kind against the cap
 * and the preview), success against persisted outputs, sent against delivered on the cliff curve, the growth
 * trend with its forecast crossing, and breakdowns by client version and a chosen dimension.
 */
import type { ChartConfiguration } from 'chart.js';
import type { BreakdownResponse, HookSummary, SeriesBucket, SeriesResponse } from '../../../shared/src/api.ts';
import { OUTPUT_CAP_CHARS, PREVIEW_CHARS, deliveredChars, largestOutput, type OutputKind } from '../../../shared/src/cliff.ts';
import type { Forecast, Point } from '../../../shared/src/forecast.ts';
import { ApiFailure, api } from '../api.ts';
import { COLORS, ChartPanel, referenceLine } from '../charts.ts';
import { commandsPanel } from '../commands-table.ts';
import { h, replace, table } from '../dom.ts';
import { bucketLabel, chars, dateTime, day, num, pct, statusBadge } from '../format.ts';
import { FORECAST_DAYS, dailySeries, forecastFrom, forecastText } from '../forecast.ts';
import { addGuardTrimsToCliff, guardTrimsKpi, loadGuardTrims } from '../guard-trims.ts';
import type { Page, PageContext } from '../page.ts';
import { apiQuery, buildUrl, keptParams, rangeLabel } from '../state.ts';

/** The string kinds the cliff chart draws; initialUserMessage joins only when a bucket reports it. */
const CHART_KINDS: OutputKind[] = ['additionalContext', 'stdout', 'systemMessage'];
const KIND_LABEL: Record<OutputKind, string> = {
  additionalContext: 'additionalContext', stdout: 'stdout', systemMessage: 'systemMessage', initialUserMessage: 'initialUserMessage',
};
const DAY_MS = 86_400_000;

function kindsIn(buckets: SeriesBucket[]): OutputKind[] {
  const extra = buckets.some((b) => (b.maxChars.initialUserMessage ?? 0) > 0);
  return extra ? [...CHART_KINDS, 'initialUserMessage'] : CHART_KINDS;
}

/** The cliff over time: one line per kind, the cap and the preview, persisted buckets marked. */
export function cliffChart(series: SeriesResponse): { config: ChartConfiguration; summary: string; table: HTMLTableElement } {
  const labels = series.buckets.map((b) => bucketLabel(b.start, series.step));
  const kinds = kindsIn(series.buckets);
  const persisted = series.buckets.map((b) => (b.outputsPersisted > 0 ? largestOutput(b) ?? OUTPUT_CAP_CHARS : null));
  const config: ChartConfiguration<'line'> = {
    type: 'line',
    data: {
      labels,
      datasets: [
        ...kinds.map((k) => ({
          label: `largest ${KIND_LABEL[k]}`,
          data: series.buckets.map((b) => b.maxChars[k]),
          borderColor: COLORS[k], backgroundColor: COLORS[k], borderWidth: 2, pointRadius: 3, spanGaps: false,
        })),
        referenceLine(`cap (${num(OUTPUT_CAP_CHARS)})`, OUTPUT_CAP_CHARS, labels.length, COLORS.cap, [6, 4]),
        referenceLine(`preview (~${num(PREVIEW_CHARS)})`, PREVIEW_CHARS, labels.length, COLORS.preview, [2, 3]),
        {
          label: 'bucket with persisted outputs', data: persisted, showLine: false, pointStyle: 'triangle', pointRadius: 7,
          borderColor: COLORS.persisted, backgroundColor: COLORS.persisted,
        },
      ],
    },
    options: {
      interaction: { mode: 'index', intersect: false },
      scales: { y: { beginAtZero: true, title: { display: true, text: 'characters (UTF-16 code units)' } } },
    },
  };
  const withData = series.buckets.filter((b) => largestOutput(b) !== null);
  const over = series.buckets.filter((b) => b.outputsPersisted > 0);
  const peak = withData.reduce<number | null>((m, b) => Math.max(m ?? 0, largestOutput(b) ?? 0), null);
  const summary = withData.length === 0
    ? 'No size data in this range.'
    : `Largest output ${chars(peak)} against the 10,000 cap; ${num(over.length)} of ${num(series.buckets.length)} buckets had persisted outputs.`;
  const rows = series.buckets.filter((b) => b.executions > 0).map((b) => [
    dateTime(b.start), ...kinds.map((k) => num(b.maxChars[k])), num(b.outputsPersisted),
  ]);
  return { config, summary, table: table('Largest output per bucket', ['Bucket start', ...kinds.map((k) => KIND_LABEL[k]), 'Outputs persisted'], rows) };
}

/** Success against persisted outputs per bucket: success keeps being reported while output is lost. */
export function deliveryChart(series: SeriesResponse): { config: ChartConfiguration; summary: string; table: HTMLTableElement } {
  const labels = series.buckets.map((b) => bucketLabel(b.start, series.step));
  const config: ChartConfiguration<'bar'> = {
    type: 'bar',
    data: {
      labels,
      datasets: [
        { label: 'hook commands reporting success', data: series.buckets.map((b) => b.success), backgroundColor: COLORS.success },
        { label: 'outputs persisted (not delivered)', data: series.buckets.map((b) => b.outputsPersisted), backgroundColor: COLORS.persisted },
        { label: 'executions with persisted outputs', data: series.buckets.map((b) => b.executionsWithPersisted), backgroundColor: '#7f3b08' },
      ],
    },
    options: { interaction: { mode: 'index', intersect: false }, scales: { y: { beginAtZero: true, title: { display: true, text: 'count' } } } },
  };
  const success = series.buckets.reduce((s, b) => s + b.success, 0);
  const persisted = series.buckets.reduce((s, b) => s + b.outputsPersisted, 0);
  const rows = series.buckets.filter((b) => b.executions > 0).map((b) => [dateTime(b.start), num(b.executions), num(b.success), num(b.outputsPersisted), num(b.executionsWithPersisted)]);
  return {
    config,
    summary: `${num(success)} hook commands reported success; ${num(persisted)} outputs were persisted instead of delivered.`,
    table: table('Success and persisted outputs per bucket', ['Bucket start', 'Executions', 'Success', 'Outputs persisted', 'Executions with persisted'], rows),
  };
}

/** Sent against delivered: the cliff curve with this hook's observed sizes placed on it. */
export function cliffCurveChart(hook: HookSummary, series: SeriesResponse): { config: ChartConfiguration; summary: string; table: HTMLTableElement } {
  const seen = new Map<string, { kind: OutputKind; sent: number }>();
  for (const b of series.buckets) {
    for (const k of kindsIn(series.buckets)) {
      const v = b.maxChars[k];
      if (v !== null && v > 0) seen.set(`${k}:${v}`, { kind: k, sent: v });
    }
  }
  const observed = [...seen.values()].sort((a, b) => a.sent - b.sent);
  const maxSent = Math.max(15_000, ...observed.map((o) => o.sent * 1.1));
  const curve = [{ x: 0, y: 0 }, { x: OUTPUT_CAP_CHARS, y: OUTPUT_CAP_CHARS }, { x: OUTPUT_CAP_CHARS + 1, y: PREVIEW_CHARS }, { x: Math.round(maxSent), y: PREVIEW_CHARS }];
  const config: ChartConfiguration<'scatter'> = {
    type: 'scatter',
    data: {
      datasets: [
        { label: 'delivered(n): n up to 10,000, then ~2,000', data: curve, showLine: true, borderColor: COLORS.cap, backgroundColor: COLORS.cap, pointRadius: 0, borderWidth: 2 },
        ...(['additionalContext', 'stdout', 'systemMessage', 'initialUserMessage'] as OutputKind[])
          .filter((k) => observed.some((o) => o.kind === k))
          .map((k) => ({
            label: `observed ${KIND_LABEL[k]}`,
            data: observed.filter((o) => o.kind === k).map((o) => ({ x: o.sent, y: deliveredChars(o.sent) })),
            borderColor: COLORS[k], backgroundColor: COLORS[k], pointRadius: 5,
          })),
      ],
    },
    options: {
      scales: {
        x: { type: 'linear', min: 0, max: Math.round(maxSent), title: { display: true, text: 'characters sent by the hook' } },
        y: { min: 0, max: 11_000, title: { display: true, text: 'characters the model sees' } },
      },
    },
  };
  const peak = largestOutput(hook);
  const lost = peak === null ? null : peak - deliveredChars(peak);
  const summary = peak === null
    ? 'No size data in this range: delivery cannot be measured (client older than 2.1.280).'
    : lost && lost > 0
      ? `Largest output ${chars(peak)}: the model saw about ${chars(deliveredChars(peak))}, losing ${chars(lost)} (${pct(lost / peak)}).`
      : `Largest output ${chars(peak)}: delivered whole, ${chars(OUTPUT_CAP_CHARS - peak)} of headroom.`;
  const rows = observed.map((o) => [KIND_LABEL[o.kind], num(o.sent), num(deliveredChars(o.sent)), num(o.sent - deliveredChars(o.sent))]);
  return { config, summary, table: table('Observed sizes on the cliff', ['Kind', 'Sent', 'Delivered', 'Lost'], rows) };
}

/** The growth trend: daily largest output, the fitted line carried to the cap, and the forecast date. */
export function growthChart(points: Point[], forecast: Forecast | null): { config: ChartConfiguration; summary: string; table: HTMLTableElement } {
  const first = points[0]?.t ?? Date.now();
  const last = points[points.length - 1]?.t ?? first;
  const end = forecast?.crossesAtMs && forecast.crossesAtMs - last < 90 * DAY_MS ? Math.max(last, forecast.crossesAtMs) : last;
  const fitAt = (t: number): number | null => (forecast ? forecast.current + forecast.slopePerDay * ((t - last) / DAY_MS) : null);
  const fit = forecast ? [{ x: first, y: fitAt(first) ?? 0 }, { x: end, y: fitAt(end) ?? 0 }] : [];
  const config: ChartConfiguration<'scatter'> = {
    type: 'scatter',
    data: {
      datasets: [
        { label: 'daily largest output', data: points.map((p) => ({ x: p.t, y: p.value })), showLine: true, borderColor: COLORS.additionalContext, backgroundColor: COLORS.additionalContext, pointRadius: 3 },
        { label: 'trend (least squares)', data: fit, showLine: true, borderColor: COLORS.fit, backgroundColor: COLORS.fit, borderDash: [5, 4], pointRadius: 0 },
        { label: `cap (${num(OUTPUT_CAP_CHARS)})`, data: [{ x: first, y: OUTPUT_CAP_CHARS }, { x: Math.max(end, first + DAY_MS), y: OUTPUT_CAP_CHARS }], showLine: true, borderColor: COLORS.cap, backgroundColor: COLORS.cap, borderDash: [6, 4], pointRadius: 0 },
      ],
    },
    options: {
      scales: {
        x: { type: 'linear', title: { display: true, text: 'day' }, ticks: { callback: (v) => day(Number(v)).slice(0, 5), maxTicksLimit: 8 } },
        y: { beginAtZero: true, title: { display: true, text: 'characters' } },
      },
    },
  };
  const latest = points[points.length - 1]?.value ?? null;
  let summary: string;
  if (!forecast) summary = `Not enough days with size data for a forecast (${points.length} of the 3 needed in the last ${FORECAST_DAYS} days).`;
  else if (forecast.crossesAtMs !== null) summary = `Growing ${num(forecast.slopePerDay)} chars/day; the trend crosses the 10,000 cap around ${day(forecast.crossesAtMs)} (in ${forecastText(forecast, latest)}).`;
  else summary = `Trend ${forecast.slopePerDay >= 0 ? '+' : ''}${num(forecast.slopePerDay)} chars/day: ${forecastText(forecast, latest)}.`;
  return { config, summary, table: table('Daily largest output', ['Day', 'Largest output'], points.map((p) => [day(p.t), num(p.value)])) };
}

function breakdownTable(r: BreakdownResponse, id: string): HTMLElement {
  if (r.rows.length === 0) return h('p', { class: 'muted', id }, 'No executions in this range.');
  return h('div', { class: 'table-scroll' }, h('table', { class: 'data', id },
    h('caption', { class: 'sr-only' }, `By ${r.dimension}`),
    h('thead', null, h('tr', null, ...[r.dimension, 'Status', 'Executions', 'Success', 'Outputs persisted', 'Largest output', 'Without size data'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', null, ...r.rows.map((row) => h('tr', null,
      h('th', { scope: 'row' }, row.value === '' ? '(not set)' : row.value),
      h('td', null, statusBadge(row.status)),
      h('td', { class: 'num' }, num(row.executions)),
      h('td', { class: 'num' }, num(row.success)),
      h('td', { class: 'num' }, num(row.outputsPersisted)),
      h('td', { class: 'num' }, chars(largestOutput(row))),
      h('td', { class: 'num' }, num(row.sizeUnknownExecutions)),
    ))),
  ));
}

/** Builds the hook page. */
export function hookPage(root: HTMLElement, ctx: PageContext): Page {
  const { state } = ctx;
  const hookId = state.route.page === 'hook' ? state.route.hookId : '';
  const by = state.params.get('by') ?? 'user.id';

  const title = h('h1', { id: 'hook-title' }, 'Hook');
  const facts = h('div', { class: 'kpis', id: 'hook-facts' });
  const cliff = new ChartPanel('cliff', 'The cliff over time', 'Largest output per bucket for each string kind, against the 10,000-character cap and the ~2,000-character preview; triangles mark buckets with persisted outputs.');
  const delivery = new ChartPanel('delivery', 'Success against persisted outputs', 'Claude Code reports success even when an output was persisted: the gap is output the model never saw whole.');
  const curve = new ChartPanel('curve', 'Sent against delivered', 'delivered(n) = n up to 10,000, then about 2,000: this hook\'s observed sizes placed on the cliff.');
  const growth = new ChartPanel('growth', 'Growth and forecast', `Daily largest output over the last ${FORECAST_DAYS} days and the least-squares trend carried to the cap.`);
  const byVersion = h('div', { id: 'by-version-holder' });
  const byDim = h('div', { id: 'by-dimension-holder' });
  const dimSelect = h('select', { id: 'breakdown-dimension', 'aria-label': 'Break down by' });
  dimSelect.addEventListener('change', () => ctx.navigate(buildUrl(`/hooks/${hookId}`, state, { ...keptParams(state.params), by: dimSelect.value }), { replace: true }));
  void ctx.dimensions().then((dims) => {
    replace(dimSelect, ...dims.filter((d) => d !== 'service.version').map((d) => h('option', { value: d, selected: d === by }, d)));
  }, () => undefined);

  const commands = commandsPanel();
  const content = h('div', { id: 'hook-content' },
    h('section', { class: 'panel' }, facts),
    h('div', { class: 'charts' }, cliff.element, delivery.element, curve.element, growth.element),
    h('section', { class: 'panel', 'aria-labelledby': 'breakdown-title' },
      h('h2', { id: 'breakdown-title' }, 'Breakdown'),
      h('h3', null, 'By client version'), byVersion,
      h('h3', null, h('label', { for: 'breakdown-dimension' }, 'By '), dimSelect), byDim),
    commands.element,
  );
  document.title = 'Hook · hookwatch';
  replace(root, ctx.link(buildUrl('/', state, keptParams(state.params)), { class: 'back' }, '← Overview'), title, h('p', { class: 'muted' }, 'Loading…'));

  return {
    async refresh(signal) {
      const q = apiQuery(state);
      let detail;
      try {
        detail = await api.hook(hookId, q, signal);
      } catch (err) {
        if (err instanceof ApiFailure && (err.status === 404 || err.status === 400)) {
          replace(root, ctx.link(buildUrl('/', state), { class: 'back' }, '← Overview'),
            h('section', { class: 'panel empty', id: 'empty-state' }, h('h1', null, 'No such hook'), h('p', null, `hookwatch has no hook with id ${hookId}. It may have been pruned by retention.`)));
          return;
        }
        throw err;
      }
      const [series, daily, versions, dim, , guardTrims] = await Promise.all([
        api.series(hookId, q, signal),
        dailySeries(hookId, q.to ?? 'now', state.filters, signal),
        api.breakdown(hookId, { ...q, dimension: 'service.version' }, signal),
        api.breakdown(hookId, { ...q, dimension: by }, signal).catch((err: unknown) => err instanceof ApiFailure ? err : Promise.reject(err)),
        commands.refresh(hookId, q, signal),
        loadGuardTrims(hookId, q, signal),
      ]);
      const hk = detail.hook;
      document.title = `${hk.hookName} · hookwatch`;
      replace(title, hk.hookName, ' ', statusBadge(hk.status));
      if (!content.isConnected) {
        replace(root, ctx.link(buildUrl('/', state, keptParams(state.params)), { class: 'back' }, '← Overview'), title,
          h('p', { class: 'muted range-label' }, `${hk.hookEvent} · ${rangeLabel(state.range)} · buckets of ${series.step >= 3600 ? `${series.step / 3600} h` : `${series.step / 60} min`}`), content);
      }
      const { forecast, points } = forecastFrom(daily);
      const latest = points[points.length - 1]?.value ?? null;
      replace(facts,
        h('div', { class: 'kpi', 'data-kpi': 'executions' }, h('div', { class: 'kpi-label' }, 'Executions'), h('div', { class: 'kpi-value' }, num(hk.executions))),
        h('div', { class: 'kpi', 'data-kpi': 'persisted' }, h('div', { class: 'kpi-label' }, 'Outputs persisted'), h('div', { class: 'kpi-value' }, num(hk.outputsPersisted))),
        h('div', { class: 'kpi', 'data-kpi': 'largest' }, h('div', { class: 'kpi-label' }, 'Largest output'), h('div', { class: 'kpi-value' }, chars(largestOutput(hk))),
          h('div', { class: 'kpi-note' }, 'upper bound: Claude Code reports sums over the hook commands of one execution')),
        h('div', { class: 'kpi', 'data-kpi': 'headroom' }, h('div', { class: 'kpi-label' }, 'Headroom'), h('div', { class: 'kpi-value' }, hk.headroom === null ? 'unknown' : chars(hk.headroom))),
        h('div', { class: 'kpi', 'data-kpi': 'forecast' }, h('div', { class: 'kpi-label' }, 'Crosses the cap'),
          h('div', { class: 'kpi-value' }, forecast?.crossesAtMs ? day(forecast.crossesAtMs) : forecastText(forecast, latest)),
          forecast?.crossesAtMs ? h('div', { class: 'kpi-note' }, `in ${forecastText(forecast, latest)}`) : null),
        h('div', { class: 'kpi', 'data-kpi': 'size-unknown' }, h('div', { class: 'kpi-label' }, 'Without size data'), h('div', { class: 'kpi-value' }, num(hk.sizeUnknownExecutions))),
        guardTrimsKpi(guardTrims),
      );
      const c1 = cliffChart(series);
      addGuardTrimsToCliff(c1.config, series, guardTrims);
      cliff.render(c1.config, c1.summary, c1.table);
      const c2 = deliveryChart(series);
      delivery.render(c2.config, c2.summary, c2.table);
      const c3 = cliffCurveChart(hk, series);
      curve.render(c3.config, c3.summary, c3.table);
      const c4 = growthChart(points, forecast);
      growth.render(c4.config, c4.summary, c4.table);
      replace(byVersion, breakdownTable(versions, 'by-version'));
      replace(byDim, dim instanceof ApiFailure ? h('p', { class: 'warn' }, dim.message) : breakdownTable(dim, 'by-dimension'));
    },
    destroy() {
      for (const c of [cliff, delivery, curve, growth]) c.destroy();
    },
  };
}
