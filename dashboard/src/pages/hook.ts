/**
 * One hook over the chosen range: the cliff over time (largest output per bucket per string kind against the cap
 * and the preview), success against persisted outputs, sent against delivered on the cliff curve, the growth
 * trend with its forecast crossing, and breakdowns by client version and a chosen dimension.
 */
import type { ChartConfiguration, TooltipItem } from 'chart.js';
import type { AlertSummary, BreakdownResponse, HookSummary, SeriesResponse } from '../../../shared/src/api.ts';
import { OUTPUT_CAP_CHARS, PREVIEW_CHARS, largestOutput, persistedAtLeast, type OutputKind } from '../../../shared/src/cliff.ts';
import type { Forecast, Point } from '../../../shared/src/forecast.ts';
import { ApiFailure, api } from '../api.ts';
import { COLORS, ChartPanel, bucketAxis, bucketTooltip, capColor, countAxis, previewColor, referenceLine, sizeAxis, sizeLine } from '../charts.ts';
import { commandsPanel } from '../commands-table.ts';
import { breakable, h, replace, scrollBox, table } from '../dom.ts';
import { bucketLabel, bucketTooltipTitle, chars, isolated, num, partialTitles, plural, shownStatus, statusBadge, utcDayMonth, type BucketCover } from '../format.ts';
import { FORECAST_DAYS, dailySeries, forecastFrom, forecastReading, type ForecastReading } from '../forecast.ts';
import { addGuardTrimsToCliff, guardTrimsKpi, loadGuardTrims } from '../guard-trims.ts';
import type { Page, PageContext } from '../page.ts';
import { zoomOutUrl } from '../shell-state.ts';
import { apiQuery, buildUrl, coverageNote } from '../state.ts';
import { cssColor } from '../theme.ts';
import {
  ALERT_TIMELINE, alertBands, alertRows, backUrl, breakdownBy, breakdownCut, breakdownRows, breakdownUrl, cliffDescription, cliffView, curveRows, curveSummary, deliveryView, dimensionOptions,
  DAY_MS, dayTicks, facts, filterEmpty, followQueries, growthCovers, growthRows, growthUnmeasured, hookIdOf, noSuchHook, observedSizes, persistedKnown, seriesCovers, subtitle, timelineDescription, unfilteredPanelNote, zoomUrl, type Fact,
} from './hook-state.ts';

const KIND_LABEL: Record<OutputKind, string> = {
  additionalContext: 'additionalContext', stdout: 'stdout', systemMessage: 'systemMessage', initialUserMessage: 'initialUserMessage',
};

function labelsOf(series: SeriesResponse): string[] {
  const span = Date.parse(series.to) - Date.parse(series.from);
  return series.buckets.map((b) => bucketLabel(b.start, series.step, span));
}

/** Per bucket, its title when the range cuts it (partialTitles), null when whole. */
function partialOf(series: SeriesResponse): (string | null)[] {
  return partialTitles(seriesCovers(series), series.step, Date.parse(series.to) - Date.parse(series.from));
}

/** The cliff over time: one line per kind, the cap and the preview, persisted buckets marked. */
export function cliffChart(series: SeriesResponse): { config: ChartConfiguration; summary: string; table: HTMLTableElement; partial: (string | null)[] } {
  const labels = labelsOf(series);
  const dots = series.buckets.length > 40 ? 2 : 3;
  const partial = partialOf(series);
  const v = cliffView(series);
  const marker = 'bucket with persisted outputs';
  // Every line is a size against the cap, but the marker's: its height is the bucket's size, its news the count.
  const line = (item: TooltipItem<'line'>): string => {
    const b = series.buckets[item.dataIndex];
    // A bucket's sizes are of its measured executions: at least, where some sent no size data.
    if (item.dataset.label !== marker || !b) return sizeLine(item.dataset.label ?? '', item.raw as number | null, (b?.sizeUnknownExecutions ?? 0) > 0);
    const known = persistedKnown(b);
    return `${marker}: ${known.why === null ? '' : 'at least '}${plural(known.count, 'output')} persisted`;
  };
  const config: ChartConfiguration<'line'> = {
    type: 'line',
    data: {
      labels,
      datasets: [
        ...v.kinds.map((k) => ({
          label: `largest ${KIND_LABEL[k]}`,
          data: series.buckets.map((b) => b.maxChars[k]),
          borderColor: COLORS[k], backgroundColor: COLORS[k], borderWidth: 2, pointRadius: dots, spanGaps: false,
        })),
        referenceLine(`cap (${num(OUTPUT_CAP_CHARS)})`, OUTPUT_CAP_CHARS, labels.length, capColor(), [6, 4]),
        referenceLine(`preview (~${num(PREVIEW_CHARS)})`, PREVIEW_CHARS, labels.length, previewColor(), [2, 3]),
        {
          label: marker, data: v.persisted, showLine: false, pointStyle: 'triangle', pointRadius: 7,
          borderColor: COLORS.persisted, backgroundColor: COLORS.persisted,
        },
      ],
    },
    options: {
      interaction: { mode: 'index', intersect: false },
      plugins: { tooltip: bucketTooltip(series.buckets.map((b) => b.executions), series.step, line, partial) },
      scales: { x: bucketAxis(series.step), y: sizeAxis(v.peak) },
    },
  };
  return { config, summary: v.summary, table: table('Largest output per bucket', v.headers, v.rows), partial };
}

/** Success against persisted outputs per bucket: success keeps being reported while output is lost. */
export function deliveryChart(series: SeriesResponse): { config: ChartConfiguration; summary: string; table: HTMLTableElement; partial: (string | null)[] } {
  const labels = labelsOf(series);
  const partial = partialOf(series);
  const persisted = 'outputs persisted (not delivered)';
  // The persisted bar is a lower bound where a bucket's executions sent no size data or no persisted count: its
  // line says "at least" (or "none known") and why, never a bare count read as exact.
  const line = (item: TooltipItem<'line'>): string => {
    const b = series.buckets[item.dataIndex];
    if (item.dataset.label !== persisted || !b) return `${item.dataset.label ?? ''}: ${num(item.raw as number)}`;
    const known = persistedKnown(b);
    return `${persisted}: ${known.text}${known.why === null ? '' : ` (${known.why})`}`;
  };
  // Each bucket's counts drawn in front of one another, not side by side (three bars a bucket are slivers when
  // buckets are narrow): success fills the bucket at the back, the outputs persisted stand narrower in front of it,
  // and the executions with persisted outputs (another count) are a diamond at their own height, never a bar that
  // could be read as the outputs'. The legend and the tooltip keep this order.
  const inOrder = (a: { datasetIndex?: number }, b: { datasetIndex?: number }): number => (a.datasetIndex ?? 0) - (b.datasetIndex ?? 0);
  const config: ChartConfiguration<'bar' | 'line'> = {
    type: 'bar',
    data: {
      labels,
      datasets: [
        { label: 'hook commands reporting success', data: series.buckets.map((b) => b.success), backgroundColor: COLORS.success, grouped: false, categoryPercentage: 0.9, barPercentage: 1, order: 2 },
        { label: persisted, data: series.buckets.map((b) => persistedAtLeast(b)), backgroundColor: COLORS.persisted, grouped: false, categoryPercentage: 0.9, barPercentage: 0.6, order: 1 },
        {
          type: 'line', label: 'executions with persisted outputs', data: series.buckets.map((b) => b.executionsWithPersisted), showLine: false, order: 0,
          pointStyle: 'rectRot', pointRadius: (c) => (c.raw === 0 ? 0 : 6), pointHoverRadius: (c) => (c.raw === 0 ? 0 : 7),
          // Outlined in the panel's colour to stand off the bars behind; in a partial bucket, drawn hollow, in its own.
          borderColor: (c) => ((partial[c.dataIndex] ?? null) === null ? cssColor('--panel') : COLORS.executionsWithPersisted), borderWidth: 1.5, backgroundColor: COLORS.executionsWithPersisted,
        },
      ],
    },
    options: {
      interaction: { mode: 'index', intersect: false },
      plugins: {
        legend: { labels: { sort: inOrder } },
        tooltip: { ...bucketTooltip(series.buckets.map((b) => b.executions), series.step, line, partial), itemSort: inOrder },
      },
      scales: { x: bucketAxis(series.step), y: countAxis() },
    },
  };
  const v = deliveryView(series);
  return {
    config,
    summary: v.summary,
    table: table('Success and persisted outputs per bucket', v.headers, v.rows),
    partial,
  };
}

/** Sent against delivered: the cliff curve with this hook's observed sizes placed on it. */
export function cliffCurveChart(hook: HookSummary, series: SeriesResponse): { config: ChartConfiguration; summary: string; table: HTMLTableElement } {
  const observed = observedSizes(series);
  const maxSent = Math.max(15_000, ...observed.map((o) => o.sent * 1.1));
  const curve = [{ x: 0, y: 0 }, { x: OUTPUT_CAP_CHARS, y: OUTPUT_CAP_CHARS }, { x: OUTPUT_CAP_CHARS + 1, y: PREVIEW_CHARS }, { x: Math.round(maxSent), y: PREVIEW_CHARS }];
  const config: ChartConfiguration<'scatter'> = {
    type: 'scatter',
    data: {
      datasets: [
        { label: 'delivered(n): n up to 10,000, then ~2,000', data: curve, showLine: true, borderColor: capColor(), backgroundColor: capColor(), pointRadius: 0, borderWidth: 2 },
        ...(['additionalContext', 'stdout', 'systemMessage', 'initialUserMessage'] as OutputKind[])
          .filter((k) => observed.some((o) => o.kind === k))
          .map((k) => ({
            label: `observed ${KIND_LABEL[k]}`,
            data: observed.filter((o) => o.kind === k).map((o) => ({ x: o.sent, y: o.delivered })),
            borderColor: COLORS[k], backgroundColor: COLORS[k], pointRadius: 5,
          })),
      ],
    },
    options: {
      // Both coordinates are sizes, never "(12,578, 2,000)": the title is the size sent against the cap (where the
      // point sits on the x axis, as the other charts title a bucket), each line what the model sees of it.
      plugins: {
        tooltip: {
          callbacks: {
            title: (items) => (items[0] ? sizeLine('sent', items[0].parsed.x) : ''),
            label: (item) => {
              const { x, y } = item.parsed;
              return `${item.dataset.label ?? ''}: the model sees ${chars(y)}${x !== null && y !== null && x > y ? `, ${chars(x - y)} lost` : ''}`;
            },
          },
        },
      },
      scales: {
        x: { type: 'linear', min: 0, max: Math.round(maxSent), title: { display: true, text: 'characters sent by the hook' } },
        y: { min: 0, max: Math.round(Math.max(11_000, ...observed.map((o) => o.delivered * 1.05))), title: { display: true, text: 'characters the model sees' }, ticks: { precision: 0 } },
      },
    },
  };
  return { config, summary: curveSummary(hook), table: table('Observed sizes on the cliff', ['Kind', 'Sent', 'Delivered', 'Lost'], curveRows(observed)) };
}

/** The growth trend: daily largest output, the fitted line carried to the cap, and the forecast date. */
export function growthChart(points: Point[], forecast: Forecast | null, reading: ForecastReading, covers: readonly BucketCover[] = [], unmeasured: { sentence: string; partly: boolean[] } = { sentence: '', partly: [] }): { config: ChartConfiguration; summary: string; table: HTMLTableElement; partial: (string | null)[] } {
  const first = points[0]?.t ?? Date.now();
  const last = points[points.length - 1]?.t ?? first;
  const end = reading.kind === 'soon' && forecast?.crossesAtMs ? Math.max(last, forecast.crossesAtMs) : last;
  const fitAt = (t: number): number | null => (forecast ? forecast.current + forecast.slopePerDay * ((t - last) / DAY_MS) : null);
  const fit = forecast ? [{ x: first, y: fitAt(first) ?? 0 }, { x: end, y: fitAt(end) ?? 0 }] : [];
  const peak = Math.max(0, ...points.map((p) => p.value), ...fit.map((p) => p.y));
  const cap = `cap (${num(OUTPUT_CAP_CHARS)})`;
  // Per point, its title when the range cuts its day (the newest, still filling), as the other charts' buckets.
  const partial = partialTitles(covers, DAY_MS / 1000, 0);
  const config: ChartConfiguration<'scatter'> = {
    type: 'scatter',
    data: {
      datasets: [
        { label: 'daily largest output', data: points.map((p) => ({ x: p.t, y: p.value })), showLine: true, borderColor: COLORS.additionalContext, backgroundColor: COLORS.additionalContext, pointRadius: 3 },
        // The trend and the cap run across the days, no day's value: reference lines, never drawn partial.
        { label: 'trend (least squares)', data: fit, showLine: true, borderColor: COLORS.fit, backgroundColor: COLORS.fit, borderDash: [5, 4], pointRadius: 0, ...({ reference: true } as object) },
        { label: cap, data: [{ x: first, y: OUTPUT_CAP_CHARS }, { x: Math.max(end, first + DAY_MS), y: OUTPUT_CAP_CHARS }], showLine: true, borderColor: capColor(), backgroundColor: capColor(), borderDash: [6, 4], pointRadius: 0, ...({ reference: true } as object) },
      ],
    },
    options: {
      // A point is a UTC day, as the axis title says; its line tells the size, never the x value (milliseconds).
      plugins: {
        tooltip: {
          callbacks: {
            title: (items) => {
              const day = items.find((i) => i.datasetIndex === 0);
              return (day ? partial[day.dataIndex] : null) ?? bucketTooltipTitle(utcDayMonth(items[0]?.parsed.x ?? 0), DAY_MS / 1000);
            },
            label: (item) => (item.dataset.label === cap ? cap : sizeLine(item.dataset.label ?? '', item.parsed.y)),
          },
        },
      },
      scales: {
        // A tick on each day's point (every few days on a long axis), never between two: a label half a day
        // off would name the wrong day; one day of data must not label its axis "30/11 30/11 30/11".
        x: {
          type: 'linear', min: first - DAY_MS / 2, max: Math.max(end, first + DAY_MS) + DAY_MS / 2, ...bucketAxis(DAY_MS / 1000),
          afterBuildTicks: (axis) => {
            axis.ticks = dayTicks(first, Math.max(end, first + DAY_MS)).map((value) => ({ value }));
          },
          ticks: { callback: (v) => utcDayMonth(Number(v)) },
        },
        y: sizeAxis(peak, 'characters'),
      },
    },
  };
  return { config, summary: [reading.sentence, unmeasured.sentence].filter((x) => x !== '').join(' '), table: table('Daily largest output', ['Day (UTC)', 'Largest output'], growthRows(points, covers, unmeasured.partly)), partial };
}

/**
 * A breakdown's figure columns, in breakdownRows' cell order. As on the overview, `opt` columns give way on a phone:
 * the value, its status, what was persisted and the largest output stay.
 */
const BREAKDOWN_COLUMNS: readonly { label: string; opt?: boolean }[] = [
  { label: 'Executions', opt: true }, { label: 'Commands OK', opt: true }, { label: 'Outputs persisted' }, { label: 'Largest output' }, { label: 'Without size data', opt: true },
];

/** A breakdown's table; each value a link to this hook filtered by it (drillUrl), where the API can filter by it. */
function breakdownTable(r: BreakdownResponse, id: string, drill: Parameters<typeof breakdownRows>[1], link: PageContext['link']): HTMLElement {
  if (r.rows.length === 0) return h('p', { class: 'muted', id }, 'No executions in this range.');
  const cut = breakdownCut(r);
  const box = scrollBox(`By ${r.dimension}`, h('table', { class: 'data breakdown', id },
    h('caption', { class: 'sr-only' }, `By ${r.dimension}`),
    h('thead', null, h('tr', null, ...[r.dimension, 'Status', ...BREAKDOWN_COLUMNS.map((c) => c.label)].map((t, i) => h('th', { scope: 'col', class: BREAKDOWN_COLUMNS[i - 2]?.opt ? 'opt' : undefined }, t)))),
    h('tbody', null, ...breakdownRows(r, drill).map((row) => h('tr', null,
      h('th', { scope: 'row' }, row.url === null ? breakable(row.value) : link(row.url, { class: 'drill', title: `This hook's figures for ${r.dimension} = ${row.value}` }, breakable(row.value))),
      h('td', null, statusBadge(row.status, row.counts)),
      ...row.cells.map((c, i) => h('td', { class: BREAKDOWN_COLUMNS[i]?.opt ? 'num opt' : 'num' }, c)),
    ))),
  ));
  return cut === null ? box : h('div', null, box, h('p', { class: 'muted' }, cut));
}

function fact(f: Fact): HTMLElement {
  return h('div', { class: 'kpi', 'data-kpi': f.id }, h('div', { class: 'kpi-label' }, f.label), h('div', { class: 'kpi-value' }, f.value), f.note ? h('div', { class: 'kpi-note' }, f.note) : null);
}

/**
 * The alert timeline's table: every alert of this hook, when it fired and when it resolved; or, the alerts API
 * failing, that they are unknown (not that there are none).
 */
function alertTable(alerts: AlertSummary[] | ApiFailure): HTMLElement {
  if (alerts instanceof ApiFailure) return h('p', { class: 'muted', id: 'hook-alerts-unavailable' }, `Alert timeline unavailable: ${alerts.message}`);
  if (alerts.length === 0) return h('p', { class: 'muted', id: 'hook-alerts-none' }, 'No alerts for this hook.');
  return scrollBox('Alerts on this hook', table('Alerts on this hook', ['Rule', 'State', 'Active since', 'Firing since', 'Resolved'],
    alertRows(alerts).map((a) => [a.cells[0], h('span', { class: `status state-${a.state}` }, a.cells[1]), ...a.cells.slice(2)]),
    { class: 'data', id: 'hook-alerts' }));
}

/** Builds the hook page: draws what hook-state.ts decides, fetching every figure over one resolved range. */
export function hookPage(root: HTMLElement, ctx: PageContext): Page {
  const { state } = ctx;
  const hookId = hookIdOf(state);
  const by = breakdownBy(state.params);

  const title = h('h1', { id: 'hook-title' }, 'Hook');
  const factsEl = h('div', { class: 'kpis', id: 'hook-facts' });
  const filterNote = h('div');
  const cliff = new ChartPanel('cliff', 'The cliff over time', cliffDescription(true));
  const delivery = new ChartPanel('delivery', 'Success against persisted outputs', 'Claude Code reports success even when an output was persisted: the gap is output the model never saw whole. Drag across to zoom.');
  const curve = new ChartPanel('curve', 'Sent against delivered', 'delivered(n) = n up to 10,000, then about 2,000: this hook\'s observed sizes placed on the cliff.');
  const growth = new ChartPanel('growth', 'Growth and forecast', `Daily largest output over the last ${FORECAST_DAYS} days and the least-squares trend carried to the cap.`);
  const alertsHint = h('p', { class: 'hint' }, timelineDescription(true));
  const alertsHolder = h('div', { id: 'hook-alerts-holder' });
  const byVersion = h('div', { id: 'by-version-holder' });
  const byDim = h('div', { id: 'by-dimension-holder' });
  const dimSelect = h('select', { id: 'breakdown-dimension', 'aria-label': 'Break down by' });
  dimSelect.addEventListener('change', () => ctx.navigate(breakdownUrl(state, hookId, dimSelect.value), { replace: true }));
  // The breakdowns last drawn, drawn again once the dimensions the API filters by are known: their values link there.
  let filterable: readonly string[] | null = null;
  let breakdowns: { versions: BreakdownResponse; dim: BreakdownResponse | ApiFailure } | undefined;
  const drawBreakdowns = (): void => {
    if (!breakdowns) return;
    const drill = { state, filterable };
    replace(byVersion, breakdownTable(breakdowns.versions, 'by-version', drill, ctx.link));
    // A breakdown by a dimension only raw events keep can cover less than the figures above: it says so.
    const covers = breakdowns.dim instanceof ApiFailure ? null : coverageNote(breakdowns.dim);
    replace(byDim, breakdowns.dim instanceof ApiFailure ? h('p', { class: 'warn' }, breakdowns.dim.message) : breakdownTable(breakdowns.dim, 'by-dimension', drill, ctx.link),
      covers === null ? null : h('p', { class: 'warn', id: 'breakdown-coverage' }, covers));
  };
  void ctx.dimensions().then((dims) => {
    replace(dimSelect, ...dimensionOptions(dims, by).map((d) => h('option', { value: d.value, selected: d.selected }, d.value)));
    filterable = dims;
    drawBreakdowns();
  });
  let lastSeries: SeriesResponse | undefined;
  const zoom = (i: number, j: number): void => {
    const url = zoomUrl(state, hookId, lastSeries, i, j);
    if (url) ctx.navigate(url);
  };
  const zoomOut = (): void => {
    const url = zoomOutUrl(state, Date.now());
    if (url) ctx.navigate(url);
  };
  cliff.enableZoom(zoom, zoomOut);
  delivery.enableZoom(zoom, zoomOut);

  // Guard trims and transcripts are not kept per dimension: under a filter their panels say they count everyone,
  // and the guard's points stay off the filtered cliff chart.
  const guardUnfiltered = unfilteredPanelNote(state.filters, 'guard trims');
  const commands = commandsPanel(unfilteredPanelNote(state.filters, 'transcripts'));
  const content = h('div', { id: 'hook-content' },
    filterNote,
    h('section', { class: 'panel', 'aria-label': 'Key figures' }, factsEl),
    h('div', { class: 'charts' }, cliff.element, delivery.element, curve.element, growth.element),
    h('section', { class: 'panel', id: ALERT_TIMELINE, 'aria-labelledby': 'hook-alerts-title' }, h('h2', { id: 'hook-alerts-title' }, 'Alert timeline'),
      alertsHint, alertsHolder),
    h('section', { class: 'panel', 'aria-labelledby': 'breakdown-title' },
      h('h2', { id: 'breakdown-title' }, 'Breakdown'),
      h('h3', null, 'By client version'), byVersion,
      h('h3', null, h('label', { for: 'breakdown-dimension' }, 'By '), dimSelect), byDim),
    commands.element,
  );
  document.title = 'Hook · hookwatch';
  replace(root, ctx.link(backUrl(state), { class: 'back' }, '← Overview'), title, h('p', { class: 'muted' }, 'Loading…'));

  return {
    async refresh(signal) {
      const q0 = apiQuery(state);
      let detail;
      try {
        detail = await api.hook(hookId, q0, signal);
      } catch (err) {
        // A 400 is "no such hook" only for the id itself (not one hookwatch gives): one refusing a filter or the
        // range (a link from a hookwatch keeping other dimensions) is said as refreshes' failures are, its chip removable.
        if (err instanceof ApiFailure && (err.status === 404 || (err.status === 400 && err.parameter === 'id'))) {
          replace(root, ctx.link(buildUrl('/', state), { class: 'back' }, '← Overview'),
            h('section', { class: 'panel empty', id: 'empty-state' }, h('h1', null, 'No such hook'), h('p', null, noSuchHook(hookId))));
          return;
        }
        throw err;
      }
      // Every later call covers the span this one resolved: the key figures and the breakdowns agree while
      // events keep arriving.
      const q = followQueries(state, detail, by);
      const [series, daily, versions, dim, alerts, , guardTrims] = await Promise.all([
        api.series(hookId, q.series, signal),
        dailySeries(hookId, q0.to ?? 'now', state.filters, signal),
        api.breakdown(hookId, q.versions, signal),
        api.breakdown(hookId, q.dimension, signal).catch((err: unknown) => err instanceof ApiFailure ? err : Promise.reject(err)),
        // This hook's alerts alone, asked of the API: the whole fleet's list holds the newest 1,000 resolved ones of
        // every hook, which may leave this hook's out. A hookwatch without alerts API has none.
        api.alerts({ hook: hookId }, signal).then((r) => r.alerts, (err: unknown) => (err instanceof ApiFailure ? (err.status === 404 ? [] : err) : Promise.reject(err))),
        commands.refresh(hookId, q.commands, signal),
        loadGuardTrims(hookId, q.guardTrims, signal),
      ]);
      lastSeries = series;
      const hk = detail.hook;
      document.title = `${isolated(hk.hookName)} · hookwatch`;
      replace(title, breakable(hk.hookName), ' ', statusBadge(hk.status, hk));
      if (!content.isConnected) {
        replace(root, ctx.link(backUrl(state), { class: 'back' }, '← Overview'), title,
          h('p', { class: 'muted range-label' }, subtitle(hk, state, series.step)), content);
      }
      const { forecast, points } = forecastFrom(daily);
      const reading = forecastReading(forecast, {
        status: shownStatus(hk), latest: largestOutput(hk), unmeasured: hk.sizeUnknownExecutions, days: points.length, pastRange: state.range.kind === 'custom',
        quietSince: hk.executions === 0 && hk.starts === 0 ? hk.lastSeen : null,
      });
      const empty = filterEmpty(hk, state);
      const covers = coverageNote(detail);
      replace(filterNote, covers === null ? null : h('p', { class: 'warn', id: 'range-coverage' }, covers),
        empty && h('p', { class: 'warn', id: 'filter-empty' }, empty.text, ctx.link(empty.clearUrl, {}, 'Remove the filters')));
      replace(factsEl, ...facts(hk, reading).map(fact), guardTrimsKpi(guardTrims, guardUnfiltered));
      const alertsKnown = !(alerts instanceof ApiFailure);
      cliff.setDescription(cliffDescription(alertsKnown));
      cliff.setBands(alertBands(alerts instanceof ApiFailure ? [] : alerts, series, { firing: cssColor('--over'), pending: cssColor('--near'), resolved: cssColor('--muted') }));
      const c1 = cliffChart(series);
      if (guardUnfiltered === null) addGuardTrimsToCliff(c1.config, series, guardTrims);
      cliff.setPartial(c1.partial);
      cliff.render(c1.config, c1.summary, c1.table);
      const c2 = deliveryChart(series);
      delivery.setPartial(c2.partial);
      delivery.render(c2.config, c2.summary, c2.table);
      const c3 = cliffCurveChart(hk, series);
      curve.render(c3.config, c3.summary, c3.table);
      const c4 = growthChart(points, forecast, reading, growthCovers(daily, points), growthUnmeasured(daily, points));
      growth.setPartial(c4.partial);
      growth.render(c4.config, c4.summary, c4.table);
      const hint = timelineDescription(alertsKnown);
      if (alertsHint.textContent !== hint) alertsHint.textContent = hint;
      replace(alertsHolder, alertTable(alerts));
      breakdowns = { versions, dim };
      drawBreakdowns();
    },
    destroy() {
      for (const c of [cliff, delivery, curve, growth]) c.destroy();
    },
  };
}
