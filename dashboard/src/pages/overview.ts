/**
 * The overview: fleet KPIs for the chosen range, the fleet's persisted outputs over time by hook (the cliff for
 * the whole fleet at a glance), and every hook ranked by risk (persisted outputs first, then least headroom,
 * then the soonest forecast crossing) with a sparkline of its largest output against the cap. Each row, bar and
 * sparkline point opens the hook; dragging across the chart zooms the range.
 */
import type { ChartConfiguration } from 'chart.js';
import type { FleetSeriesResponse, HookSummary, HooksResponse, OverviewResponse } from '../../../shared/src/api.ts';
import { OUTPUT_CAP_CHARS, largestOutput, type DeliveryStatus } from '../../../shared/src/cliff.ts';
import type { Forecast } from '../../../shared/src/forecast.ts';
import { ApiFailure, api } from '../api.ts';
import { COLORS, ChartPanel, SERIES_COLORS, capColor, countAxis, referenceLine, sizeAxis } from '../charts.ts';
import { breakable, h, replace, table } from '../dom.ts';
import { ago, bucketLabel, chars, dateTime, headroomText, num, pct, plural, shownStatus, statusBadge } from '../format.ts';
import { dailySeries, forecastFrom, forecastReading } from '../forecast.ts';
import type { Page, PageContext } from '../page.ts';
import { apiQuery, buildUrl, chartStep, customRange, keptParams, rangeLabel, rangeQuery } from '../state.ts';
import { sparkGeometry, sparkline } from '../sparkline.ts';

/** Rows whose forecast the overview fits (one daily series request each), riskiest first. */
export const FORECAST_ROWS = 20;
const ROW_LIMIT = 200;
/** Hooks drawn on their own in the fleet chart; the rest are one "other hooks" series. */
export const FLEET_TOP = 5;

type SortKey = 'risk' | 'name' | 'executions' | 'persisted' | 'largest' | 'headroom' | 'forecast' | 'lastSeen';
/** `opt` columns give way on a phone: status, hook, persisted and largest output stay. */
const COLUMNS: { key: SortKey | null; label: string; opt?: boolean }[] = [
  { key: 'risk', label: 'Status' },
  { key: 'name', label: 'Hook' },
  { key: null, label: 'Largest output over time', opt: true },
  { key: 'executions', label: 'Executions', opt: true },
  { key: null, label: 'Success', opt: true },
  { key: 'persisted', label: 'Persisted' },
  { key: 'largest', label: 'Largest output' },
  { key: 'headroom', label: 'Headroom', opt: true },
  { key: 'forecast', label: 'Days to the cliff', opt: true },
  { key: 'lastSeen', label: 'Last seen', opt: true },
];
/** The direction a column sorts in on its first click: the riskiest or largest first. */
const FIRST_DIR: Record<SortKey, 'asc' | 'desc'> = {
  risk: 'asc', name: 'asc', executions: 'desc', persisted: 'desc', largest: 'desc', headroom: 'asc', forecast: 'asc', lastSeen: 'desc',
};
const SORT_KEYS = COLUMNS.map((c) => c.key).filter((k): k is SortKey => k !== null);
const RISK: Record<DeliveryStatus, number> = { over: 0, near: 1, unknown: 2, ok: 3 };

interface ForecastEntry {
  forecast: Forecast | null;
  days: number;
  at: number;
}

/** How to point Claude Code at hookwatch, shown until the first event arrives: pasted into a shell, it works. */
export function setupHelp(otlpHttpPort: number | undefined): HTMLElement {
  const port = otlpHttpPort ?? 4318;
  const otlp = `${location.protocol}//${location.hostname}:${port}`;
  return h('section', { class: 'panel empty', id: 'empty-state' },
    h('h2', null, 'No events yet: here is how to point Claude Code at hookwatch'),
    h('p', null, 'Run these in the shell Claude Code starts from (or put the same variables in the "env" block of its settings.json), then start a session that fires a hook:'),
    h('pre', null, h('code', { id: 'setup-snippet' }, [
      'export CLAUDE_CODE_ENABLE_TELEMETRY=1',
      'export OTEL_LOGS_EXPORTER=otlp',
      'export OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf',
      `export OTEL_EXPORTER_OTLP_ENDPOINT=${otlp}`,
      '# optional: lets you filter and break down by team',
      'export OTEL_RESOURCE_ATTRIBUTES=team=platform',
    ].join('\n'))),
    h('p', null, otlpHttpPort === undefined
      ? 'The endpoint is hookwatch\'s OTLP/HTTP address (4318 unless HOOKWATCH_OTLP_HTTP_ADDR says otherwise; hookwatch logs it at start).'
      : `This hookwatch receives OTLP/HTTP on port ${port}. If Claude Code runs on another machine, use this host's address as it reaches it.`,
    ' Clients older than 2.1.280 send no output sizes: they show as "unknown", never as healthy.'),
  );
}

function kpi(id: string, label: string, value: string, note?: string): HTMLElement {
  return h('div', { class: 'kpi', 'data-kpi': id },
    h('div', { class: 'kpi-label' }, label),
    h('div', { class: 'kpi-value' }, value),
    note ? h('div', { class: 'kpi-note' }, note) : null);
}

/** The fleet chart: persisted outputs per bucket, stacked by hook (top N, rest grouped), and the fleet's largest output against the cap. */
export function fleetChart(fleet: FleetSeriesResponse, top = FLEET_TOP): { config: ChartConfiguration; summary: string; table: HTMLTableElement; topIds: (string | null)[] } {
  const span = Date.parse(fleet.to) - Date.parse(fleet.from);
  const labels = fleet.buckets.map((b) => bucketLabel(b, fleet.step, span));
  const withPersisted = fleet.hooks.filter((hk) => hk.outputsPersisted.some((v) => v > 0));
  const shown = withPersisted.slice(0, top);
  const rest = fleet.hooks.filter((hk) => !shown.includes(hk));
  const restPersisted = fleet.buckets.map((_b, i) => rest.reduce((s, hk) => s + (hk.outputsPersisted[i] ?? 0), 0));
  const executions = fleet.buckets.map((_b, i) => fleet.hooks.reduce((s, hk) => s + (hk.executions[i] ?? 0), 0));
  const largest = fleet.buckets.map((_b, i) => fleet.hooks.reduce<number | null>((m, hk) => {
    const v = hk.largest[i] ?? null;
    return v === null ? m : Math.max(m ?? 0, v);
  }, null));
  const peak = largest.reduce<number | null>((m, v) => (v === null ? m : Math.max(m ?? 0, v)), null);
  const bar = (label: string, data: number[], color: string): Record<string, unknown> => ({
    type: 'bar', label, data, backgroundColor: color, stack: 'persisted', yAxisID: 'y', order: 2, pointStyle: 'rect',
  });
  const datasets = [
    ...shown.map((hk, i) => bar(hk.hookName, hk.outputsPersisted, SERIES_COLORS[i % SERIES_COLORS.length] ?? COLORS.persisted)),
    ...(restPersisted.some((v) => v > 0) ? [bar(shown.length ? 'other hooks' : 'all hooks', restPersisted, COLORS.other)] : []),
    {
      type: 'line', label: 'largest output in the fleet', data: largest, yAxisID: 'y1', borderColor: COLORS.additionalContext, backgroundColor: COLORS.additionalContext,
      borderWidth: 2, pointRadius: fleet.buckets.length > 40 ? 0 : 2, spanGaps: false, order: 1, pointStyle: 'line',
    },
    { ...referenceLine(`cap (${num(OUTPUT_CAP_CHARS)})`, OUTPUT_CAP_CHARS, labels.length, capColor(), [6, 4]), type: 'line', yAxisID: 'y1', order: 0 },
  ];
  const config = {
    type: 'bar',
    data: { labels, datasets },
    options: {
      interaction: { mode: 'index', intersect: false },
      plugins: { tooltip: { filter: (item: { dataset: { reference?: boolean }; raw: unknown }) => item.dataset.reference !== true && item.raw !== null && item.raw !== 0 } },
      scales: {
        x: { stacked: true },
        y: { ...countAxis('outputs persisted'), stacked: true, position: 'left' },
        y1: { ...sizeAxis(peak, 'largest output (chars)'), position: 'right', grid: { drawOnChartArea: false } },
      },
    },
  } as unknown as ChartConfiguration;
  const totalPersisted = fleet.hooks.reduce((s, hk) => s + hk.outputsPersisted.reduce((a, b) => a + b, 0), 0);
  const bucketsWith = restPersisted.map((v, i) => v + shown.reduce((s, hk) => s + (hk.outputsPersisted[i] ?? 0), 0)).filter((v) => v > 0).length;
  const summary = totalPersisted === 0
    ? `No outputs persisted in this range; the largest output in the fleet was ${chars(peak)} against the 10,000 cap.`
    : `${plural(totalPersisted, 'output')} persisted across ${plural(withPersisted.length, 'hook')}, in ${num(bucketsWith)} of ${plural(fleet.buckets.length, 'bucket')}; the largest output in the fleet was ${chars(peak)}.`;
  const rows = fleet.buckets.map((b, i) => [dateTime(b), num(executions[i] ?? 0), ...shown.map((hk) => num(hk.outputsPersisted[i] ?? 0)), num(restPersisted[i] ?? 0), num(largest[i] ?? null)])
    .filter((_r, i) => (executions[i] ?? 0) > 0);
  const t = table('Persisted outputs per bucket by hook', ['Bucket start', 'Executions', ...shown.map((hk) => hk.hookName), shown.length ? 'Other hooks' : 'All hooks', 'Largest output'], rows);
  const topIds: (string | null)[] = [...shown.map((hk) => hk.id), null];
  return { config, summary, table: t, topIds };
}

/** Builds the overview page. */
export function overviewPage(root: HTMLElement, ctx: PageContext): Page {
  const { state } = ctx;
  const sortParam = state.params.get('sort');
  const sort: SortKey = (SORT_KEYS as string[]).includes(sortParam ?? '') ? (sortParam as SortKey) : 'risk';
  const dirParam = state.params.get('dir');
  const dir: 'asc' | 'desc' = dirParam === 'asc' || dirParam === 'desc' ? dirParam : FIRST_DIR[sort];
  const forecasts = new Map<string, ForecastEntry>();
  let showAll = false;
  let last: { hooks: HooksResponse; fleet?: FleetSeriesResponse } | undefined;
  const filtered = Object.keys(state.filters).length > 0;
  const filterText = Object.entries(state.filters).map(([k, v]) => `${k} = ${v}`).join(', ');

  document.title = 'Overview · hookwatch';
  const kpis = h('div', { class: 'kpis', id: 'kpis' });
  const versions = h('div', { id: 'client-versions' });
  const tbody = h('tbody', { id: 'hook-rows' });
  const tableNote = h('p', { class: 'hint', id: 'table-note' });
  const fleetPanel = new ChartPanel('fleet', 'Persisted outputs over time', `Outputs saved to a file instead of delivered, per bucket, for the ${FLEET_TOP} hooks with the most (the rest grouped), and the largest output in the fleet against the 10,000 cap. Click a bar to open that hook at that time; drag across the chart to zoom.`);
  const headRow = h('tr', null, ...COLUMNS.map((c) => {
    const cls = c.opt ? 'opt' : undefined;
    if (!c.key) return h('th', { scope: 'col', class: cls }, c.label);
    const key = c.key;
    const active = key === sort;
    const nextDir = active ? (dir === 'asc' ? 'desc' : 'asc') : FIRST_DIR[key];
    return h('th', { scope: 'col', class: cls, 'aria-sort': active ? (dir === 'asc' ? 'ascending' : 'descending') : 'none' },
      h('button', {
        type: 'button', class: 'sort', 'data-sort': key,
        onclick: () => ctx.navigate(buildUrl('/', state, { sort: key, dir: nextDir, refresh: state.params.get('refresh') ?? undefined }), { replace: true }),
      }, c.label, active ? (dir === 'asc' ? ' ▲' : ' ▼') : ''));
  }));
  const heading = (): HTMLElement => h('h1', null, 'Overview ', h('span', { class: 'muted range-label' }, rangeLabel(state.range)));
  const content = h('div', { id: 'overview-content' },
    h('section', { class: 'panel', 'aria-labelledby': 'kpi-title' }, h('h2', { id: 'kpi-title' }, 'Fleet'), kpis, versions),
    fleetPanel.element,
    h('section', { class: 'panel', 'aria-labelledby': 'hooks-title' },
      h('h2', { id: 'hooks-title' }, 'Hooks by risk'),
      h('p', { class: 'hint' }, 'Persisted outputs first (the model saw a ~2,000-character preview instead), then the least headroom under the 10,000-character cap, then the soonest forecast crossing. The sparkline is the largest output per bucket against the cap (dashed); triangles mark persisted outputs.'),
      h('div', { class: 'table-scroll' }, h('table', { id: 'hooks-table', class: 'data' }, h('caption', { class: 'sr-only' }, 'Hooks ranked by delivery risk'), h('thead', null, headRow), tbody)),
      tableNote),
  );
  const placeholder = h('p', { class: 'muted' }, 'Loading…');
  replace(root, heading(), placeholder);

  const hookUrl = (id: string, range = state.range): string => buildUrl(`/hooks/${id}`, { range, filters: state.filters }, {});
  const bucketRange = (i: number): ReturnType<typeof customRange> | undefined => {
    const f = last?.fleet;
    const start = f?.buckets[i];
    if (!f || !start) return undefined;
    return customRange(Date.parse(start), Date.parse(start) + f.step * 1000);
  };
  fleetPanel.enableZoom((i, j) => {
    const f = last?.fleet;
    const a = f?.buckets[i];
    const b = f?.buckets[j];
    if (!f || !a || !b) return;
    ctx.navigate(buildUrl('/', { range: customRange(Date.parse(a), Date.parse(b) + f.step * 1000), filters: state.filters }, keptParams(state.params)));
  });

  const forecastOf = (hk: HookSummary): ReturnType<typeof forecastReading> | undefined => {
    const status = shownStatus(hk);
    if (status === 'over') return forecastReading(null, { status });
    const f = forecasts.get(hk.id);
    if (!f) return status === 'unknown' && largestOutput(hk) === null ? forecastReading(null, { status }) : undefined;
    return forecastReading(f.forecast, { status, latest: largestOutput(hk), days: f.days });
  };

  const sorted = (hooks: HookSummary[]): HookSummary[] => {
    const sign = dir === 'asc' ? 1 : -1;
    // Unknown values sort last in either direction: unknown is not zero, nor the smallest.
    const known = (a: number | null | undefined, b: number | null | undefined): number => {
      if (a === b) return 0;
      if (a === null || a === undefined) return 1;
      if (b === null || b === undefined) return -1;
      return sign * (a - b);
    };
    const days = (hk: HookSummary): number | null | undefined => forecastOf(hk)?.days;
    const list = hooks.map((hk, i) => ({ hk, i }));
    const compare = (x: { hk: HookSummary; i: number }, y: { hk: HookSummary; i: number }): number => {
      const a = x.hk;
      const b = y.hk;
      switch (sort) {
        case 'name': return sign * a.hookName.localeCompare(b.hookName);
        case 'executions': return sign * (a.executions - b.executions);
        case 'persisted': return sign * (a.outputsPersisted - b.outputsPersisted);
        case 'largest': return known(largestOutput(a), largestOutput(b));
        case 'headroom': return known(a.headroom, b.headroom);
        case 'forecast': return known(days(a), days(b));
        case 'lastSeen': return sign * (Date.parse(a.lastSeen) - Date.parse(b.lastSeen));
        default: {
          // The API ranks by status, persisted outputs and headroom; a hook partly without size data ranks as
          // unknown, and the forecast breaks the remaining ties.
          const risk = RISK[shownStatus(a)] - RISK[shownStatus(b)];
          if (risk) return sign * risk;
          const tie = a.status === b.status && a.outputsPersisted === b.outputsPersisted && a.headroom === b.headroom;
          return (tie ? known(days(a), days(b)) : 0) || sign * (x.i - y.i);
        }
      }
    };
    list.sort((x, y) => compare(x, y) || x.i - y.i);
    return list.map((x) => x.hk);
  };

  /** Each drawn row's sparkline cell, so the sparklines can arrive after the rows without redrawing them. */
  let sparkCells = new Map<string, HTMLTableCellElement>();
  const sparkCell = (hk: HookSummary): HTMLElement => {
    const td = h('td', { class: 'opt spark-cell' });
    sparkCells.set(hk.id, td);
    fillSpark(hk, td);
    return td;
  };
  const fillSpark = (hk: HookSummary, td: HTMLTableCellElement): void => {
    const f = fleetById.get(hk.id);
    if (!f) return;
    const peak = f.largest.reduce<number | null>((m, v) => (v === null ? m : Math.max(m ?? 0, v)), null);
    const persistedBuckets = f.outputsPersisted.filter((v) => v > 0).length;
    const svg = sparkline(f.largest, f.outputsPersisted, `${hk.hookName}: largest output per bucket, peak ${chars(peak)}; ${plural(persistedBuckets, 'bucket')} with persisted outputs`);
    svg.addEventListener('click', (ev) => {
      // A point opens the hook at that bucket's time.
      const box = svg.getBoundingClientRect();
      const i = sparkGeometry(f.largest).index(((ev.clientX - box.left) / box.width) * svg.viewBox.baseVal.width);
      const r = bucketRange(i);
      ev.stopPropagation();
      if (r) ctx.navigate(hookUrl(hk.id, r));
    });
    replace(td, svg);
  };

  let fleetById = new Map<string, FleetSeriesResponse['hooks'][number]>();
  const drawRows = (): void => {
    if (!last) return;
    if (last.fleet) fleetById = new Map(last.fleet.hooks.map((x) => [x.id, x]));
    sparkCells = new Map();
    const hooks = sorted(last.hooks.hooks);
    const shown = showAll ? hooks : hooks.slice(0, ROW_LIMIT);
    replace(tbody, ...shown.map((hk) => {
      const reading = forecastOf(hk);
      const row = h('tr', { 'data-hook-id': hk.id, 'data-status': shownStatus(hk), class: 'hook-row' },
        h('td', null, statusBadge(hk.status, hk)),
        h('th', { scope: 'row', class: 'hook-cell' }, ctx.link(hookUrl(hk.id), { class: 'hook-link' }, breakable(hk.hookName)), h('div', { class: 'muted small' }, hk.hookEvent)),
        sparkCell(hk),
        h('td', { class: 'num opt' }, num(hk.executions)),
        h('td', { class: 'num opt' }, num(hk.success)),
        h('td', { class: 'num' }, num(hk.outputsPersisted)),
        h('td', { class: 'num' }, chars(largestOutput(hk))),
        h('td', { class: 'num opt', title: headroomText(hk.headroom) }, hk.headroom === null ? 'unknown' : hk.headroom < 0 ? `${num(-hk.headroom)} over` : num(hk.headroom)),
        h('td', { class: 'num opt', 'data-col': 'forecast', title: reading?.sentence ?? '' }, reading ? reading.value : '–'),
        h('td', { class: 'opt' }, h('time', { datetime: hk.lastSeen, title: dateTime(hk.lastSeen) }, ago(hk.lastSeen))),
      );
      // The whole row opens the hook (the name stays the link for keyboards and new tabs).
      row.addEventListener('click', (ev) => {
        if ((ev.target as Element).closest('a, button, svg')) return;
        ctx.navigate(hookUrl(hk.id));
      });
      return row;
    }));
    replace(tableNote,
      `${plural(hooks.length, 'hook')}. Forecasts are fitted for the ${FORECAST_ROWS} riskiest hooks that are not over the cap (daily largest output, last 30 days).`,
      hooks.length > shown.length ? h('button', { type: 'button', id: 'show-all', onclick: () => {
        showAll = true;
        drawRows();
      } }, ` Show all ${num(hooks.length)}`) : null);
  };

  const fitForecasts = async (hooks: HookSummary[], signal: AbortSignal): Promise<void> => {
    const now = Date.now();
    const todo = hooks.filter((hk) => hk.status === 'near' || hk.status === 'ok').slice(0, FORECAST_ROWS)
      .filter((hk) => (forecasts.get(hk.id)?.at ?? 0) < now - 300_000);
    const to = rangeQuery(state.range).to;
    // A few at a time: the overview should not hold the API's attention from other readers.
    const worker = async (): Promise<void> => {
      for (let hk = todo.shift(); hk; hk = todo.shift()) {
        const series = await dailySeries(hk.id, to, state.filters, signal);
        const { forecast, points } = forecastFrom(series);
        forecasts.set(hk.id, { forecast, days: points.length, at: Date.now() });
      }
    };
    await Promise.all([worker(), worker(), worker()]);
  };

  const drawFleet = (fleet: FleetSeriesResponse): void => {
    const c = fleetChart(fleet);
    fleetPanel.render({
      ...c.config,
      options: {
        ...c.config.options,
        onClick: (_ev: unknown, elements: { datasetIndex: number; index: number }[]) => {
          const el = elements.find((e) => e.datasetIndex < c.topIds.length && c.topIds[e.datasetIndex]);
          const id = el ? c.topIds[el.datasetIndex] : undefined;
          const r = el ? bucketRange(el.index) : undefined;
          if (id && r) ctx.navigate(hookUrl(id, r));
        },
      },
    } as ChartConfiguration, c.summary, c.table);
  };

  const show = (): void => {
    if (!content.isConnected) replace(root, heading(), content);
  };

  return {
    async refresh(signal) {
      const q = apiQuery(state);
      // The ranked hooks are what a visitor came for: ask for them first and draw them as soon as they arrive
      // (the server answers one SQLite query at a time). The other calls then use the range this one resolved,
      // so every number on the page covers the same span even while events keep arriving.
      const hooksCall = api.hooks(q, signal);
      // The fleet chart is asked for at once, right behind the rows (its buckets are aligned to the step: a
      // second later draws the same chart); a hookwatch without it (an older server) still gets its tables.
      const fleetCall = api.fleetSeries({ ...q, step: String(chartStep(state.range)) }, signal)
        .catch((err: unknown) => (err instanceof ApiFailure && err.status === 404 ? undefined : Promise.reject(err)));
      fleetCall.catch(() => undefined);
      const hooks = await hooksCall;
      const same = { ...q, from: hooks.from, to: hooks.to };
      const overviewCall = api.overview(same, signal);
      overviewCall.catch(() => undefined);
      last = { hooks, ...(last?.fleet ? { fleet: last.fleet } : {}) };
      if (hooks.hooks.length > 0) {
        show();
        drawRows();
        if (performance.getEntriesByName('hookwatch:first-rows').length === 0) performance.mark('hookwatch:first-rows');
      }
      const [overview, fleet]: [OverviewResponse, FleetSeriesResponse | undefined] = await Promise.all([overviewCall, fleetCall]);
      if (overview.lastEventAt === null && !filtered) {
        replace(root, h('h1', null, 'Overview'), setupHelp(overview.otlpHttpPort));
        return;
      }
      show();
      last = { hooks, ...(fleet ? { fleet } : {}) };
      const t = overview.totals;
      // Counted from the rows as the table shows them: a hook partly without size data is unknown here too.
      const sc: Record<DeliveryStatus, number> = { over: 0, near: 0, ok: 0, unknown: 0 };
      for (const hk of hooks.hooks) sc[shownStatus(hk)]++;
      replace(kpis,
        kpi('executions', 'Executions', num(t.executions), `${plural(t.numHooks, 'hook command')} run`),
        kpi('success', 'Commands reporting success', num(t.success), t.numHooks ? pct(t.success / t.numHooks) : undefined),
        kpi('persisted', 'Outputs persisted', num(t.outputsPersisted), `${plural(t.executionsWithPersisted, 'execution')} lost output to the cap`),
        kpi('hooks', 'Hooks', num(overview.hooks), `${num(sc.over)} over · ${num(sc.near)} near · ${num(sc.ok)} ok · ${num(sc.unknown)} unknown`),
        kpi('size-share', 'Events with size data', pct(overview.sizeDataShare), `${plural(t.sizeUnknownExecutions, 'execution')} without sizes`),
        filtered
          ? kpi('last-event', 'Last matching event', overview.lastEventAt === null ? 'none' : ago(overview.lastEventAt), overview.lastEventAt === null ? `nothing matches ${filterText}` : dateTime(overview.lastEventAt))
          : kpi('last-event', 'Last event', ago(overview.lastEventAt), dateTime(overview.lastEventAt)),
      );
      const blind = overview.clientVersions.filter((v) => !v.hasSizeData);
      replace(versions,
        h('h3', null, 'Client versions'),
        overview.clientVersions.length === 0 ? h('p', { class: 'muted' }, 'No executions in this range.') : h('div', { class: 'table-scroll' }, h('table', { class: 'data', id: 'versions-table' },
          h('caption', { class: 'sr-only' }, 'Client versions in the range'),
          h('thead', null, h('tr', null, ...['Client', 'Version', 'Executions', 'Without size data', 'Sizes'].map((x) => h('th', { scope: 'col' }, x)))),
          h('tbody', null, ...overview.clientVersions.map((v) => h('tr', { 'data-version': v.version },
            h('td', null, v.serviceName), h('td', null, v.version), h('td', { class: 'num' }, num(v.executions)),
            h('td', { class: 'num' }, num(v.sizeUnknownExecutions)),
            h('td', null, v.hasSizeData ? 'reported' : 'missing (older than 2.1.280: upgrade to see delivery)'))))),
        ),
        blind.length ? h('p', { class: 'warn', id: 'blind-versions' }, `Without size data: ${blind.map((v) => `${v.serviceName} ${v.version}`).join(', ')}`) : null,
      );
      if (hooks.hooks.length === 0) {
        fleetPanel.element.hidden = true;
        const why = filtered
          ? [`No hook executions match ${filterText} in the ${rangeLabel(state.range)}. `, ctx.link(buildUrl('/', { range: state.range, filters: {} }, keptParams(state.params)), { id: 'clear-filters' }, 'Remove the filters')]
          : [`No hook executions in the ${rangeLabel(state.range)}; the last event arrived ${ago(overview.lastEventAt)}. Try a longer range.`];
        replace(tbody, h('tr', null, h('td', { colspan: COLUMNS.length, class: 'empty-row' }, ...why)));
        replace(tableNote);
        return;
      }
      fleetPanel.element.hidden = fleet === undefined;
      if (fleet) {
        drawFleet(fleet);
        fleetById = new Map(fleet.hooks.map((x) => [x.id, x]));
        for (const hk of hooks.hooks) {
          const td = sparkCells.get(hk.id);
          if (td) fillSpark(hk, td);
        }
      }
      if (performance.getEntriesByName('hookwatch:first-charts').length === 0) performance.mark('hookwatch:first-charts');
      await fitForecasts(hooks.hooks, signal);
      drawRows();
    },
    destroy() {
      forecasts.clear();
      fleetPanel.destroy();
    },
  };
}
