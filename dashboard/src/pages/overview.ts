/**
 * The overview: fleet KPIs for the chosen range and every hook ranked by risk (persisted outputs first, then
 * least headroom, then the soonest forecast crossing), sortable, each row a link to the hook's page.
 */
import type { HookSummary, HooksResponse, OverviewResponse } from '../../../shared/src/api.ts';
import type { Forecast } from '../../../shared/src/forecast.ts';
import { api } from '../api.ts';
import { h, replace } from '../dom.ts';
import { ago, chars, dateTime, num, pct, statusBadge } from '../format.ts';
import { dailySeries, forecastFrom, forecastText } from '../forecast.ts';
import type { Page, PageContext } from '../page.ts';
import { apiQuery, buildUrl, rangeLabel, rangeQuery } from '../state.ts';
import { largestOutput } from '../../../shared/src/cliff.ts';

/** Rows whose forecast the overview fits (one daily series request each), riskiest first. */
export const FORECAST_ROWS = 20;
const ROW_LIMIT = 200;

type SortKey = 'risk' | 'name' | 'executions' | 'persisted' | 'largest' | 'headroom' | 'forecast' | 'lastSeen';
const COLUMNS: { key: SortKey | null; label: string }[] = [
  { key: 'risk', label: 'Status' },
  { key: 'name', label: 'Hook' },
  { key: 'executions', label: 'Executions' },
  { key: null, label: 'Success' },
  { key: 'persisted', label: 'Outputs persisted' },
  { key: 'largest', label: 'Largest output' },
  { key: 'headroom', label: 'Headroom' },
  { key: 'forecast', label: 'Days to the cliff' },
  { key: 'lastSeen', label: 'Last seen' },
];
/** The direction a column sorts in on its first click: the riskiest or largest first. */
const FIRST_DIR: Record<SortKey, 'asc' | 'desc'> = {
  risk: 'asc', name: 'asc', executions: 'desc', persisted: 'desc', largest: 'desc', headroom: 'asc', forecast: 'asc', lastSeen: 'desc',
};
const SORT_KEYS = COLUMNS.map((c) => c.key).filter((k): k is SortKey => k !== null);

interface ForecastEntry {
  forecast: Forecast | null;
  at: number;
}

/** How to point Claude Code at hookwatch, shown until the first event arrives. */
export function setupHelp(): HTMLElement {
  const otlp = `${location.protocol}//${location.hostname}:4318`;
  return h('section', { class: 'panel empty', id: 'empty-state' },
    h('h2', null, 'No events yet: here is how to point Claude Code at hookwatch'),
    h('p', null, 'Set these in the environment Claude Code starts in (or in the "env" block of its settings.json), then run a session that fires a hook:'),
    h('pre', null, h('code', null, [
      'CLAUDE_CODE_ENABLE_TELEMETRY=1',
      'OTEL_LOGS_EXPORTER=otlp',
      'OTEL_EXPORTER_OTLP_PROTOCOL=http/json',
      `OTEL_EXPORTER_OTLP_ENDPOINT=${otlp}`,
      'OTEL_RESOURCE_ATTRIBUTES=team=platform   # optional: lets you break down by team',
    ].join('\n'))),
    h('p', null, 'The endpoint is hookwatch\'s OTLP/HTTP address (4318 by default; hookwatch logs it at start). Clients older than 2.1.280 send no output sizes: they show as "unknown", never as healthy.'),
  );
}

function kpi(id: string, label: string, value: string, note?: string): HTMLElement {
  return h('div', { class: 'kpi', 'data-kpi': id },
    h('div', { class: 'kpi-label' }, label),
    h('div', { class: 'kpi-value' }, value),
    note ? h('div', { class: 'kpi-note' }, note) : null);
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
  let last: { hooks: HooksResponse } | undefined;

  document.title = 'Overview · hookwatch';
  const kpis = h('div', { class: 'kpis', id: 'kpis' });
  const versions = h('div', { id: 'client-versions' });
  const tbody = h('tbody', { id: 'hook-rows' });
  const tableNote = h('p', { class: 'hint', id: 'table-note' });
  const headRow = h('tr', null, ...COLUMNS.map((c) => {
    if (!c.key) return h('th', { scope: 'col' }, c.label);
    const key = c.key;
    const active = key === sort;
    const nextDir = active ? (dir === 'asc' ? 'desc' : 'asc') : FIRST_DIR[key];
    return h('th', { scope: 'col', 'aria-sort': active ? (dir === 'asc' ? 'ascending' : 'descending') : 'none' },
      h('button', {
        type: 'button', class: 'sort', 'data-sort': key,
        onclick: () => ctx.navigate(buildUrl('/', state, { sort: key, dir: nextDir, refresh: state.params.get('refresh') ?? undefined }), { replace: true }),
      }, c.label, active ? (dir === 'asc' ? ' ▲' : ' ▼') : ''));
  }));
  const content = h('div', { id: 'overview-content' },
    h('section', { class: 'panel', 'aria-labelledby': 'kpi-title' }, h('h2', { id: 'kpi-title' }, 'Fleet'), kpis, versions),
    h('section', { class: 'panel', 'aria-labelledby': 'hooks-title' },
      h('h2', { id: 'hooks-title' }, 'Hooks by risk'),
      h('p', { class: 'hint' }, 'Persisted outputs first (the model saw a ~2,000-character preview instead), then the least headroom under the 10,000-character cap, then the soonest forecast crossing.'),
      h('div', { class: 'table-scroll' }, h('table', { id: 'hooks-table', class: 'data' }, h('caption', { class: 'sr-only' }, 'Hooks ranked by delivery risk'), h('thead', null, headRow), tbody)),
      tableNote),
  );
  const placeholder = h('p', { class: 'muted' }, 'Loading…');
  replace(root, h('h1', null, 'Overview ', h('span', { class: 'muted range-label' }, rangeLabel(state.range))), placeholder);

  const forecastDays = (id: string): number | null | undefined => {
    const f = forecasts.get(id);
    if (!f) return undefined;
    return f.forecast?.daysToCap ?? null;
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
        case 'forecast': return known(forecastDays(a.id), forecastDays(b.id));
        case 'lastSeen': return sign * (Date.parse(a.lastSeen) - Date.parse(b.lastSeen));
        default: {
          // The API ranks by status, persisted outputs and headroom; the forecast breaks the remaining ties.
          const tie = a.status === b.status && a.outputsPersisted === b.outputsPersisted && a.headroom === b.headroom;
          return (tie ? known(forecastDays(a.id), forecastDays(b.id)) : 0) || sign * (x.i - y.i);
        }
      }
    };
    list.sort((x, y) => compare(x, y) || x.i - y.i);
    return list.map((x) => x.hk);
  };

  const drawRows = (): void => {
    if (!last) return;
    const hooks = sorted(last.hooks.hooks);
    const shown = showAll ? hooks : hooks.slice(0, ROW_LIMIT);
    replace(tbody, ...shown.map((hk) => {
      const f = forecasts.get(hk.id);
      const fText = hk.status === 'over' ? 'over the cap now' : f ? forecastText(f.forecast, largestOutput(hk)) : hk.status === 'unknown' ? 'unknown' : '–';
      return h('tr', { 'data-hook-id': hk.id, 'data-status': hk.status },
        h('td', null, statusBadge(hk.status)),
        h('th', { scope: 'row' }, ctx.link(buildUrl(`/hooks/${hk.id}`, state), { class: 'hook-link' }, hk.hookName), h('div', { class: 'muted small' }, hk.hookEvent)),
        h('td', { class: 'num' }, num(hk.executions)),
        h('td', { class: 'num' }, num(hk.success)),
        h('td', { class: 'num' }, num(hk.outputsPersisted)),
        h('td', { class: 'num' }, chars(largestOutput(hk))),
        h('td', { class: 'num' }, hk.headroom === null ? 'unknown' : num(hk.headroom)),
        h('td', { class: 'num', 'data-col': 'forecast' }, fText),
        h('td', null, h('time', { datetime: hk.lastSeen, title: dateTime(hk.lastSeen) }, ago(hk.lastSeen))),
      );
    }));
    replace(tableNote,
      `${num(hooks.length)} hooks. Forecasts are fitted for the ${FORECAST_ROWS} riskiest hooks that are not over the cap (daily largest output, last 30 days).`,
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
        forecasts.set(hk.id, { forecast: forecastFrom(series).forecast, at: Date.now() });
      }
    };
    await Promise.all([worker(), worker(), worker()]);
  };

  return {
    async refresh(signal) {
      const q = apiQuery(state);
      // The ranked hooks are what a visitor came for: ask for them first and draw them as soon as they arrive
      // (the server answers one SQLite query at a time), then fill in the fleet KPIs.
      const hooksCall = api.hooks(q, signal);
      const overviewCall = api.overview(q, signal);
      overviewCall.catch(() => undefined);
      const hooks = await hooksCall;
      last = { hooks };
      if (hooks.hooks.length > 0) {
        if (!content.isConnected) replace(root, h('h1', null, 'Overview ', h('span', { class: 'muted range-label' }, rangeLabel(state.range))), content);
        drawRows();
        if (performance.getEntriesByName('hookwatch:first-rows').length === 0) performance.mark('hookwatch:first-rows');
      }
      const overview: OverviewResponse = await overviewCall;
      if (overview.lastEventAt === null) {
        replace(root, h('h1', null, 'Overview'), setupHelp());
        return;
      }
      if (!content.isConnected) replace(root, h('h1', null, 'Overview ', h('span', { class: 'muted range-label' }, rangeLabel(state.range))), content);
      const t = overview.totals;
      const sc = overview.statusCounts;
      replace(kpis,
        kpi('executions', 'Executions', num(t.executions), `${num(t.numHooks)} hook commands run`),
        kpi('success', 'Commands reporting success', num(t.success), t.numHooks ? pct(t.success / t.numHooks) : undefined),
        kpi('persisted', 'Outputs persisted', num(t.outputsPersisted), `${num(t.executionsWithPersisted)} executions lost output to the cap`),
        kpi('hooks', 'Hooks', num(overview.hooks), `${num(sc.over)} over · ${num(sc.near)} near · ${num(sc.ok)} ok · ${num(sc.unknown)} unknown`),
        kpi('size-share', 'Events with size data', pct(overview.sizeDataShare), `${num(t.sizeUnknownExecutions)} executions without sizes`),
        kpi('last-event', 'Last event', ago(overview.lastEventAt), dateTime(overview.lastEventAt)),
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
        replace(tbody, h('tr', null, h('td', { colspan: COLUMNS.length, class: 'empty-row' }, `No hook executions in the ${rangeLabel(state.range)}; the last event arrived ${ago(overview.lastEventAt)}. Try a longer range.`)));
        replace(tableNote);
        return;
      }
      await fitForecasts(hooks.hooks, signal);
      drawRows();
    },
    destroy() {
      forecasts.clear();
    },
  };
}
