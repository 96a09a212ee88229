/**
 * The overview: fleet KPIs for the chosen range, the fleet's persisted outputs over time by hook (the cliff for
 * the whole fleet at a glance), and every hook ranked by risk (persisted outputs first, then least headroom,
 * then the soonest forecast crossing) with a sparkline of its largest output against the cap. Each row, bar and
 * sparkline point opens the hook; dragging across the chart zooms the range.
 */
import type { ChartConfiguration } from 'chart.js';
import type { AlertSummary, FleetSeriesHook, FleetSeriesResponse, HookSummary, HooksResponse, OverviewResponse } from '../../../shared/src/api.ts';
import { OUTPUT_CAP_CHARS } from '../../../shared/src/cliff.ts';
import { ApiFailure, api, type Query } from '../api.ts';
import { COLORS, ChartPanel, SERIES_COLORS, bucketAxis, bucketTitle, capColor, countAxis, referenceLine, sizeAxis, sizeLine } from '../charts.ts';
import { breakable, h, replace, scrollBox, table } from '../dom.ts';
import { isolated, num, statusBadge } from '../format.ts';
import { dailySeries, forecastFrom } from '../forecast.ts';
import type { Page, PageContext } from '../page.ts';
import { apiQuery, chartStep, coverageNote, followRange, rangeLabel, rangeQuery, readState, type ViewState } from '../state.ts';
import { zoomOutUrl } from '../shell-state.ts';
import { sparkGeometry, sparkline } from '../sparkline.ts';
import {
  COLUMNS, FIRING_UNKNOWN, FLEET_TOP, ROW_LIMIT, bucketRange, emptyTable, firingByHook, firingLabel, fleetClickUrl, fleetView, forecastOf, linePointRadii, forecastTodo, headerCells, hookAlertsUrl, hookRow, hookUrl, kpis, readSort,
  SEARCH_MAX, SPARK_BATCH, refusalsView, searchOf, searchUrl, setupView, sparkQuery, sparkViews, showsSetup, sortHooks, tableView, uniqueHooks, versionsView, zoomUrl, type ChartHit, type FleetView,
  type ForecastEntry, type Kpi, type SetupFacts,
} from './overview-state.ts';

/** How to point Claude Code at hookwatch, shown until the first event arrives: pasted into a shell, it works. */
export function setupHelp(otlp: SetupFacts): HTMLElement {
  const v = setupView(location, otlp);
  const refused = refusalsView(otlp.otlpRefusals, Date.now());
  return h('section', { class: 'panel empty', id: 'empty-state' },
    h('h2', null, 'No events yet: here is how to point Claude Code at hookwatch'),
    refused ? h('div', { class: 'refusals', id: 'otlp-refusals', role: 'status' },
      h('p', null, refused.headline),
      h('ul', null, ...refused.lines.map((line) => h('li', null, line)))) : null,
    h('p', null, 'Run these in the shell Claude Code starts from (or put the same variables in the "env" block of its settings.json), then start a session that fires a hook:'),
    h('pre', null, h('code', { id: 'setup-snippet' }, v.lines.join('\n'))),
    h('p', null, v.note,
    ' Clients older than 2.1.280 send no output sizes: they show as "unknown", never as healthy.'),
  );
}

function kpi(k: Kpi): HTMLElement {
  return h('div', { class: 'kpi', 'data-kpi': k.id },
    h('div', { class: 'kpi-label' }, k.label),
    h('div', { class: 'kpi-value', 'data-ago': k.agoOf }, k.value),
    k.note ? h('div', { class: 'kpi-note' }, k.note) : null);
}

/** Hooks asked for per page after the first (the API's largest page). */
const HOOKS_PAGE = 5000;
/** A row's sparkline cell: `eager` among the first ROW_LIMIT rows (its sparkline asked for at once if missing). */
interface SparkCell {
  hk: HookSummary;
  td: HTMLTableCellElement;
  eager: boolean;
}

/** A row's status cell, and the firing marker it shows (firingLabel; '' for none). */
interface StatusCell {
  hk: HookSummary;
  td: HTMLTableCellElement;
  marked: string;
}

/** How long typing pauses before the search asks for its hooks. */
const SEARCH_DEBOUNCE_MS = 300;

/** The fleet chart: persisted outputs per bucket, stacked by hook (top N, rest grouped), and the fleet's largest output against the cap. */
export function fleetChart(fleet: FleetSeriesResponse, top = FLEET_TOP): { config: ChartConfiguration; summary: string; table: HTMLTableElement; view: FleetView } {
  const v = fleetView(fleet, top);
  const bar = (label: string, data: number[], color: string): Record<string, unknown> => ({
    type: 'bar', label, data, backgroundColor: color, stack: 'persisted', yAxisID: 'y', order: 2, pointStyle: 'rect',
  });
  const datasets = [
    ...v.shown.map((hk, i) => bar(isolated(hk.hookName), v.shownPersisted[i] ?? [], SERIES_COLORS[i % SERIES_COLORS.length] ?? COLORS.persisted)),
    ...(v.restLabel ? [bar(v.restLabel, v.restPersisted, COLORS.other)] : []),
    {
      type: 'line', label: 'largest output in the fleet', data: v.largest, yAxisID: 'y1', borderColor: COLORS.additionalContext, backgroundColor: COLORS.additionalContext,
      borderWidth: 2, pointRadius: linePointRadii(v.largest), spanGaps: false, order: 1, pointStyle: 'line',
    },
    { ...referenceLine(`cap (${num(OUTPUT_CAP_CHARS)})`, OUTPUT_CAP_CHARS, v.labels.length, capColor(), [6, 4]), type: 'line', yAxisID: 'y1', order: 0 },
  ];
  const config = {
    type: 'bar',
    data: { labels: v.labels, datasets },
    options: {
      interaction: { mode: 'index', intersect: false },
      plugins: {
        tooltip: {
          filter: (item: { dataset: { reference?: boolean }; raw: unknown }) => item.dataset.reference !== true && item.raw !== null && item.raw !== 0,
          callbacks: {
            ...bucketTitle(fleet.step, v.partial),
            // Bars count outputs ("at least" where a bucket's count is a lower bound); the line is a size, read against the cap.
            label: (item: { dataset: { label?: string; yAxisID?: string }; datasetIndex: number; dataIndex: number; raw: unknown }) =>
              item.dataset.yAxisID === 'y1' ? sizeLine(item.dataset.label ?? '', item.raw as number)
                : `${item.dataset.label ?? ''}: ${(item.datasetIndex < v.shown.length ? v.shownText[item.datasetIndex]?.[item.dataIndex] : v.restText[item.dataIndex]) ?? num(item.raw as number)}`,
          },
        },
      },
      scales: {
        x: { ...bucketAxis(fleet.step), stacked: true },
        y: { ...countAxis('outputs persisted'), stacked: true, position: 'left' },
        y1: { ...sizeAxis(v.peak, 'largest output (chars)'), position: 'right', grid: { drawOnChartArea: false } },
      },
    },
  } as unknown as ChartConfiguration;
  const t = table('Persisted outputs per bucket by hook', v.tableHeaders, v.tableRows);
  return { config, summary: v.summary, table: t, view: v };
}

/** Builds the overview page: draws what overview-state.ts decides, fetching and refreshing in place. */
export function overviewPage(root: HTMLElement, ctx: PageContext): Page {
  const { state } = ctx;
  const { sort, dir } = readSort(state.params);
  /** The view as the URL now states it: the search changes it in place, and every link drawn follows it. */
  let view: ViewState = state;
  /** The hook name search: the API lists the hooks whose name contains it, over every hook, not the rows loaded. */
  let search = searchOf(state.params);
  /** The search changed: once its rows are drawn, a screen reader hears how many match. */
  let announce = false;
  const forecasts = new Map<string, ForecastEntry>();
  let showAll = false;
  /** "Show all" was pressed and every hook is on its way: the table says so instead of offering the button again. */
  let loadingAll = false;
  let last: { hooks: HooksResponse; fleet?: FleetSeriesResponse } | undefined;
  /** The fleet figures last drawn: why the table is empty is said from them. */
  let lastOverview: OverviewResponse | undefined;

  document.title = 'Overview · hookwatch';
  const kpisEl = h('div', { class: 'kpis', id: 'kpis' });
  const versions = h('div', { id: 'client-versions' });
  const tbody = h('tbody', { id: 'hook-rows' });
  const tableNote = h('p', { class: 'hint', id: 'table-note' });
  /** What the range the answers cover lacks of the one asked (coverageNote), above the figures. */
  const coverageEl = h('p', { class: 'warn', id: 'range-coverage', hidden: true });
  const fleetPanel = new ChartPanel('fleet', 'Persisted outputs over time', `Outputs saved to a file instead of delivered, per bucket, for the ${FLEET_TOP} hooks with the most (the rest grouped), and the largest output in the fleet against the 10,000 cap. Click a hook's bar to open that hook at that time, the grouped bar to zoom to its bucket; drag across the chart to zoom.`);
  const headRow = h('tr', null, ...headerCells(state, sort, dir).map((c) => {
    const cls = c.opt ? 'opt' : undefined;
    if (!c.key || c.url === null) return h('th', { scope: 'col', class: cls }, c.label);
    const url = c.url;
    return h('th', { scope: 'col', class: cls, 'aria-sort': c.ariaSort },
      h('button', {
        type: 'button', class: 'sort', 'data-sort': c.key,
        // With the search as it is now, not as it was when the header was drawn.
        onclick: () => ctx.navigate(headerCells(view, sort, dir).find((x) => x.key === c.key)?.url ?? url, { replace: true }),
      }, c.label, c.arrow));
  }));
  const hooksTable = h('table', { id: 'hooks-table', class: 'data' }, h('caption', { class: 'sr-only' }, 'Hooks ranked by delivery risk'), h('thead', null, headRow), tbody);
  /** Shown while the alert state is unknown (markFiring), in place of the rows' markers; the table described by it. */
  const firingUnknown = h('p', { class: 'hint', id: 'firing-unknown', hidden: true }, FIRING_UNKNOWN);
  const heading = (): HTMLElement => h('h1', null, 'Overview ', h('span', { class: 'muted range-label' }, rangeLabel(state.range)));
  const searchBox = h('input', {
    type: 'search', id: 'hook-search', value: search, maxlength: SEARCH_MAX, autocomplete: 'off', spellcheck: 'false',
    placeholder: 'part of a hook name', 'aria-controls': 'hooks-table', 'aria-describedby': 'table-note',
  });
  const searchStatus = h('span', { class: 'sr-only', role: 'status', id: 'hook-search-status' });
  let typing: ReturnType<typeof setTimeout> | undefined;
  /** Lists the hooks whose name contains `text`: in the URL at once (a reload or a link keeps it), then asked for. */
  const applySearch = (text: string): void => {
    clearTimeout(typing);
    const next = text.trim().slice(0, SEARCH_MAX);
    if (next === search) return;
    search = next;
    ctx.replaceUrl(searchUrl(location, next));
    view = readState(location);
    // A new list: "Show all" applies to the hooks of this search, offered again when they are many.
    showAll = false;
    loadingAll = false;
    announce = true;
    // Only the hook list takes the search: the fleet figures, chart and forecasts already shown stay. Before the
    // page has shown them, it is fetched whole.
    if (last && lastOverview) ctx.update(searchRows);
    else ctx.refresh();
  };
  searchBox.addEventListener('input', () => {
    clearTimeout(typing);
    typing = setTimeout(() => applySearch(searchBox.value), SEARCH_DEBOUNCE_MS);
  });
  searchBox.addEventListener('keydown', (ev) => {
    // Escape empties the search and lists every hook again (a search box already empty lets Escape through).
    if (ev.key !== 'Escape' || searchBox.value === '') return;
    ev.preventDefault();
    searchBox.value = '';
    applySearch('');
  });
  const clearSearch = (): void => {
    searchBox.value = '';
    applySearch('');
    searchBox.focus();
  };
  const searchForm = h('form', { class: 'table-search', role: 'search', 'aria-label': 'Hook search', onsubmit: (ev: Event) => {
    ev.preventDefault();
    applySearch(searchBox.value);
  } }, h('label', { for: 'hook-search' }, 'Search hooks by name'), searchBox, searchStatus);
  const content = h('div', { id: 'overview-content' },
    coverageEl,
    h('section', { class: 'panel', 'aria-labelledby': 'kpi-title' }, h('h2', { id: 'kpi-title' }, 'Fleet'), kpisEl, versions),
    fleetPanel.element,
    h('section', { class: 'panel', 'aria-labelledby': 'hooks-title' },
      h('h2', { id: 'hooks-title' }, 'Hooks by risk'),
      h('p', { class: 'hint' }, 'Persisted outputs first (the model saw a ~2,000-character preview instead), then the least headroom under the 10,000-character cap, then the soonest forecast crossing. The sparkline is the largest output per bucket against the cap (dashed); triangles mark persisted outputs; a hollow point is a bucket the range cuts (the newest, still filling), the line into it dashed.'),
      searchForm,
      firingUnknown,
      scrollBox('Hooks ranked by delivery risk', hooksTable),
      tableNote),
  );
  const placeholder = h('p', { class: 'muted' }, 'Loading…');
  replace(root, heading(), placeholder);

  fleetPanel.enableZoom((i, j) => {
    const url = zoomUrl(view, last?.fleet, i, j);
    if (url) ctx.navigate(url);
  }, () => {
    const url = zoomOutUrl(view, Date.now());
    if (url) ctx.navigate(url);
  });

  /** Per hook, the rules of its alerts firing (firingByHook), as the last refresh found them. */
  let firingHooks = new Map<string, string[]>();
  /** Each drawn row's status cell, so markFiring draws again only those whose marker changed. */
  let statusCells = new Map<string, StatusCell>();
  /** A row's status, with a marker leading to the hook's alerts while one of them fires. */
  const drawStatus = (cell: StatusCell): void => {
    const rules = firingHooks.get(cell.hk.id);
    cell.marked = rules ? firingLabel(rules) : '';
    replace(cell.td, statusBadge(cell.hk.status, cell.hk),
      rules ? ctx.link(hookAlertsUrl(view, cell.hk.id), { class: 'firing-marker', title: cell.marked, 'aria-label': cell.marked }, 'firing') : null);
  };
  const statusCell = (hk: HookSummary): HTMLTableCellElement => {
    const cell = { hk, td: h('td'), marked: '' };
    statusCells.set(hk.id, cell);
    drawStatus(cell);
    return cell.td;
  };
  /**
   * The firing alerts came: the rows whose marker changed are drawn again, the others left as they are (and focused).
   * None (the alerts API could not answer): no row is marked, and the table says once, quietly, that it is unknown.
   */
  const markFiring = (alerts: readonly AlertSummary[] | null): void => {
    firingUnknown.hidden = alerts !== null;
    if (alerts === null) hooksTable.setAttribute('aria-describedby', firingUnknown.id);
    else hooksTable.removeAttribute('aria-describedby');
    firingHooks = alerts === null ? new Map() : firingByHook(alerts);
    for (const cell of statusCells.values()) {
      const rules = firingHooks.get(cell.hk.id);
      if ((rules ? firingLabel(rules) : '') !== cell.marked) drawStatus(cell);
    }
  };

  /** Each drawn row's sparkline cell, so the sparklines can arrive after the rows without redrawing them. */
  let sparkCells = new Map<string, SparkCell>();
  const sparkCell = (hk: HookSummary, row: number): HTMLElement => {
    const cell = { hk, td: h('td', { class: 'opt spark-cell' }), eager: row < ROW_LIMIT };
    sparkCells.set(hk.id, cell);
    fillSpark(cell);
    return cell.td;
  };
  /**
   * The sparklines of each fleet answer: worked out (sparkViews) and built once per hook for all the times its row
   * is drawn (a refresh draws the rows up to three times, a search twice), each drawing moving the one built into
   * the row's new cell. They go with their answer once a newer one replaces it.
   */
  const sparks = new WeakMap<FleetSeriesResponse, { views: ReturnType<typeof sparkViews>; built: WeakMap<FleetSeriesHook, SVGSVGElement> }>();
  /** A hook's sparkline from a fleet answer, its partial buckets marked; a point opens the hook at that bucket's time. */
  const buildSpark = (hk: HookSummary, f: FleetSeriesHook, fleet: FleetSeriesResponse, views: ReturnType<typeof sparkViews>): SVGSVGElement => {
    const { persisted, label, partial } = views(hk.hookName, f);
    const svg = sparkline(f.largest, persisted, label, partial);
    svg.addEventListener('click', (ev) => {
      const box = svg.getBoundingClientRect();
      const i = sparkGeometry(f.largest).index(((ev.clientX - box.left) / box.width) * svg.viewBox.baseVal.width);
      const r = bucketRange(fleet, i);
      ev.stopPropagation();
      // The view as it is when clicked (a search since the sparkline was built keeps it).
      if (r) ctx.navigate(hookUrl(view, hk.id, r));
    });
    return svg;
  };
  const drawSpark = (hk: HookSummary, td: HTMLTableCellElement, f: FleetSeriesHook, fleet: FleetSeriesResponse): void => {
    let drawn = sparks.get(fleet);
    if (drawn === undefined) {
      drawn = { views: sparkViews(fleet), built: new WeakMap() };
      sparks.set(fleet, drawn);
    }
    let svg = drawn.built.get(f);
    if (svg === undefined) {
      svg = buildSpark(hk, f, fleet, drawn.views);
      drawn.built.set(f, svg);
    }
    replace(td, svg);
  };

  /**
   * Sparklines of the rows past the fleet answer's riskiest `limit` (a search, "Show all"): asked for by id, a
   * batch at a time, over the fleet answer's range and step; at once for the first ROW_LIMIT rows, past them (every
   * hook listed) once a row comes near the screen. Each is kept with the answer it came in (its buckets) and drawn
   * until the one asked over a newer fleet answer replaces it.
   */
  const extraSeries = new Map<string, { series: FleetSeriesHook; fleet: FleetSeriesResponse }>();
  /** Since the current fleet answer: the hooks asked for, those whose request failed (and why), those it did not hold. */
  let sparkAsked = new Set<string>();
  let sparkFailed = new Map<string, string>();
  let sparkNone = new Set<string>();
  const sparkWanted = new Set<string>();
  let sparkLoading = false;
  let sparkQueued = false;
  /** Rows drawn ahead of a refresh's fleet answer: none is asked for until it comes. */
  let sparkHold = false;
  /** Asks for the wanted sparklines once the rows being drawn have all said what they want. */
  const queueSparks = (): void => {
    if (sparkQueued) return;
    sparkQueued = true;
    queueMicrotask(() => {
      sparkQueued = false;
      void loadSparks();
    });
  };
  const sparkAbort = new AbortController();
  const sparkObserver = new IntersectionObserver((entries) => {
    for (const e of entries) {
      if (!e.isIntersecting) continue;
      sparkObserver.unobserve(e.target);
      const id = e.target.closest('tr')?.dataset['hookId'];
      if (id && !sparkAsked.has(id)) sparkWanted.add(id);
    }
    queueSparks();
  }, { rootMargin: '600px 0px' });
  const loadSparks = async (): Promise<void> => {
    if (sparkLoading) return;
    sparkLoading = true;
    try {
      for (let fleet = last?.fleet; fleet && sparkWanted.size > 0; fleet = last?.fleet) {
        const ids = [...sparkWanted].slice(0, SPARK_BATCH);
        const asked = sparkAsked;
        for (const id of ids) {
          sparkWanted.delete(id);
          asked.add(id);
        }
        try {
          const answer = await api.fleetSeries(sparkQuery(fleet, state.filters, ids), sparkAbort.signal);
          // A newer fleet answer came meanwhile: its own requests ask for these again over its range.
          if (asked !== sparkAsked) continue;
          for (const series of answer.hooks) extraSeries.set(series.id, { series, fleet: answer });
          for (const id of ids) if (!answer.hooks.some((x) => x.id === id)) sparkNone.add(id);
        } catch (err) {
          if (sparkAbort.signal.aborted) return;
          if (asked !== sparkAsked) continue;
          for (const id of ids) sparkFailed.set(id, (err as Error).message);
        }
        for (const id of ids) {
          const cell = sparkCells.get(id);
          if (cell) fillSpark(cell);
        }
      }
    } finally {
      sparkLoading = false;
    }
  };
  /** A newer fleet answer: the sparklines asked for by id are asked again over its range as their rows show. */
  const newSparkRound = (): void => {
    for (const id of extraSeries.keys()) if (!sparkCells.has(id)) extraSeries.delete(id);
    sparkAsked = new Set();
    sparkFailed = new Map();
    sparkNone = new Set();
    sparkWanted.clear();
  };

  const fillSpark = ({ hk, td, eager }: SparkCell): void => {
    const fleet = last?.fleet;
    // Before the first fleet answer (or from a hookwatch without one) the cell stays empty.
    if (!fleet) return;
    const own = fleetById.get(hk.id);
    if (own) {
      drawSpark(hk, td, own, fleet);
      return;
    }
    const extra = extraSeries.get(hk.id);
    const failed = sparkFailed.get(hk.id);
    // The fleet answer holds every hook of its range: this one had no execution in it.
    const none = sparkNone.has(hk.id) || fleet.rest === null;
    if (extra) drawSpark(hk, td, extra.series, extra.fleet);
    else if (failed !== undefined) replace(td, h('span', { class: 'spark-state muted small', title: `Could not load this sparkline: ${failed}. It is asked for again at the next refresh.` }, 'not loaded'));
    else if (none) replace(td, h('span', { class: 'spark-state muted small', title: 'No execution in the chart\'s range' }, 'no data'));
    else replace(td, h('span', { class: 'spark-state muted small' }, 'loading…'));
    if (none || sparkHold || sparkAsked.has(hk.id)) return;
    if (eager) {
      sparkWanted.add(hk.id);
      queueSparks();
    } else sparkObserver.observe(td);
  };

  /**
   * Every hook over the range `first` resolved: "Show all" lists every hook, not the riskiest page. Asked again
   * from the top in the API's largest pages, so one request usually holds them all: pages follow one ranking only
   * within one answer, and a hook crossing the boundary between two requests would come twice or not at all. With
   * more pages, each hook is listed once, and one of `first` the later pages missed is kept.
   */
  const allPages = async (first: HooksResponse, q: Query, signal?: AbortSignal): Promise<HooksResponse> => {
    const ask = (cursor?: string): Promise<HooksResponse> => api.hooks({ ...q, from: first.from, to: first.to, ...(cursor ? { cursor } : {}), limit: String(HOOKS_PAGE) }, signal);
    const top = await ask();
    const pages = [top.hooks];
    for (let cursor = top.nextCursor; cursor !== null && cursor !== undefined;) {
      const next = await ask(cursor);
      pages.push(next.hooks);
      cursor = next.nextCursor;
    }
    return { ...top, hooks: uniqueHooks([...pages, first.hooks]), nextCursor: null };
  };

  /** After a search, how many hooks match (or why none does), said once to a screen reader. */
  const said = (text: string): void => {
    if (!announce) return;
    announce = false;
    searchStatus.textContent = text;
  };

  /** The hook list's query: range, filters and the search (which the fleet figures do not take). */
  const hooksQuery = (): Query => ({ ...apiQuery(state), name: search === '' ? undefined : search });

  let fleetById = new Map<string, FleetSeriesResponse['hooks'][number]>();
  const drawRows = (): void => {
    if (!last) return;
    if (last.fleet) fleetById = new Map(last.fleet.hooks.map((x) => [x.id, x]));
    // The cells drawn before are gone: only the new ones are watched for coming into view.
    sparkObserver.disconnect();
    sparkCells = new Map();
    statusCells = new Map();
    const now = Date.now();
    const table = tableView(sortHooks(last.hooks.hooks, sort, dir, forecasts), showAll, last.hooks.total, search);
    // The rows are drawn anew: a keyboard user's focus on a hook's link, or on its firing marker, stays there.
    const active = document.activeElement;
    const focusedId = active instanceof HTMLElement && tbody.contains(active) ? active.closest('tr')?.dataset['hookId'] : undefined;
    const focusedLink = active instanceof HTMLElement && active.classList.contains('firing-marker') ? 'a.firing-marker' : 'a.hook-link';
    replace(tbody, ...table.shown.map((hk, i) => {
      const r = hookRow(hk, forecastOf(hk, forecasts, state.range.kind === 'custom'), now);
      const row = h('tr', { 'data-hook-id': hk.id, 'data-status': r.status, class: 'hook-row' },
        statusCell(hk),
        h('th', { scope: 'row', class: 'hook-cell' }, ctx.link(hookUrl(view, hk.id), { class: 'hook-link' }, breakable(hk.hookName)), h('div', { class: 'muted small' }, hk.hookEvent)),
        sparkCell(hk, i),
        h('td', { class: 'num opt' }, r.executions),
        h('td', { class: 'num opt' }, r.success),
        h('td', { class: 'num', ...(r.persistedTitle ? { title: r.persistedTitle } : {}) }, r.persisted),
        h('td', { class: 'num', ...(r.largestTitle ? { title: r.largestTitle } : {}) }, r.largest),
        h('td', { class: 'num opt', title: r.headroomTitle }, r.headroom),
        h('td', { class: 'num opt', 'data-col': 'forecast', title: r.forecastTitle }, r.forecast),
        h('td', { class: 'opt' }, h('time', { datetime: hk.lastSeen, 'data-ago': hk.lastSeen, title: r.lastSeenTitle }, r.lastSeen)),
      );
      // The whole row opens the hook (the name stays the link for keyboards and new tabs).
      row.addEventListener('click', (ev) => {
        if ((ev.target as Element).closest('a, button, svg')) return;
        ctx.navigate(hookUrl(view, hk.id));
      });
      return row;
    }));
    if (focusedId) {
      const row = tbody.querySelector<HTMLElement>(`tr[data-hook-id="${CSS.escape(focusedId)}"]`);
      (row?.querySelector<HTMLElement>(focusedLink) ?? row?.querySelector<HTMLElement>('a.hook-link'))?.focus({ preventScroll: true });
    }
    said(table.count);
    if (loadingAll && table.showAllLabel) {
      replace(tableNote, 'Loading every hook…');
      return;
    }
    replace(tableNote, table.note,
      table.showAllLabel ? h('button', { type: 'button', id: 'show-all', onclick: () => {
        showAll = true;
        const shown = last;
        if (!shown?.hooks.nextCursor) {
          drawRows();
          return;
        }
        loadingAll = true;
        replace(tableNote, 'Loading every hook…');
        const asked = search;
        void allPages(shown.hooks, hooksQuery()).then((hooks) => {
          // The search changed meanwhile: these are another search's hooks.
          if (search !== asked) return;
          loadingAll = false;
          // Unless a refresh that answered meanwhile brought every hook itself, these are the rows: a refresh
          // asked before the click has only the first page.
          if (last?.hooks.nextCursor) last = { ...last, hooks };
          drawRows();
        }, (err: unknown) => {
          if (search !== asked) return;
          loadingAll = false;
          showAll = false;
          replace(tableNote, `Could not load every hook: ${(err as Error).message}. `);
        });
      } }, table.showAllLabel) : null);
  };

  const fitForecasts = async (hooks: HookSummary[], signal: AbortSignal): Promise<void> => {
    const todo = forecastTodo(hooks, forecasts, Date.now());
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
    fleetPanel.setPartial(c.view.partial);
    fleetPanel.render({
      ...c.config,
      options: {
        ...c.config.options,
        onClick: (ev: unknown, _elements: unknown, chart: { getElementsAtEventForMode(e: unknown, mode: string, opts: { intersect: boolean }, useFinal: boolean): ChartHit[] }) => {
          // The bars under the pointer, not every dataset of the column the tooltip lists.
          const url = fleetClickUrl(view, last?.fleet, c.view, chart.getElementsAtEventForMode(ev, 'point', { intersect: true }, false));
          // Once Chart.js is done with the click: it still draws the bar's hover after this returns, and the page
          // the link opens destroys this chart.
          if (url) queueMicrotask(() => ctx.navigate(url));
        },
      },
    } as ChartConfiguration, c.summary, c.table);
  };

  /**
   * No row to show: says why, with a way out. False when the range has no hook at all (the fleet chart is hidden
   * too); a search that matches no name leaves the fleet as it is, its chart included.
   */
  const drawEmpty = (overview: OverviewResponse, now: number): boolean => {
    const why = emptyTable(view, overview, now, search);
    replace(tbody, h('tr', null, h('td', { colspan: COLUMNS.length, class: 'empty-row' }, why.text,
      why.clearUrl === null ? null : ctx.link(why.clearUrl, { id: 'clear-filters' }, 'Remove the filters'),
      why.clearSearch ? h('button', { type: 'button', id: 'clear-search', onclick: clearSearch }, 'Clear the search') : null)));
    replace(tableNote);
    said(why.text);
    if (!why.clearSearch) fleetPanel.element.hidden = true;
    return why.clearSearch === true;
  };

  /**
   * The search changed: its hooks, over the range the figures shown were resolved to, so the rows cover the
   * same span as the KPIs and the fleet chart beside them. Rows past the fleet answer ask for their sparklines
   * over it; forecasts are fitted for the hooks that have none yet.
   */
  async function searchRows(signal: AbortSignal): Promise<void> {
    const shown = last;
    const overview = lastOverview;
    if (!shown || !overview) return;
    const hooks = await api.hooks({ ...hooksQuery(), from: shown.hooks.from, to: shown.hooks.to }, signal);
    last = { ...shown, hooks };
    if (hooks.hooks.length === 0) {
      drawEmpty(overview, Date.now());
      return;
    }
    drawRows();
    await fitForecasts(hooks.hooks, signal);
    drawRows();
  }

  const show = (): void => {
    if (!content.isConnected) replace(root, heading(), content);
  };

  return {
    async refresh(signal) {
      const q = apiQuery(state);
      const hq = hooksQuery();
      // The ranked hooks are what a visitor came for: ask for them first and draw them as soon as they arrive
      // (the server answers one SQLite query at a time). The other calls then use the range this one resolved,
      // so every number on the page covers the same span even while events keep arriving.
      const hooksCall = api.hooks(hq, signal);
      // The alerts firing, as the shell asked for them with this refresh (the header counts them): their hooks marked.
      const firingCall = ctx.firing().then((alerts) => {
        if (!signal.aborted) markFiring(alerts);
      });
      // The fleet chart is asked for at once, right behind the rows (its buckets are aligned to the step: a
      // second later draws the same chart); a hookwatch without it (an older server) still gets its tables.
      const fleetCall = api.fleetSeries({ ...q, step: String(chartStep(state.range)) }, signal)
        .catch((err: unknown) => (err instanceof ApiFailure && err.status === 404 ? undefined : Promise.reject(err)));
      fleetCall.catch(() => undefined);
      const firstPage = await hooksCall;
      // After "Show all", every page, not only the riskiest.
      let hooks = showAll && firstPage.nextCursor ? await allPages(firstPage, hq, signal) : firstPage;
      const same = { ...q, ...followRange(hooks) };
      const overviewCall = api.overview(same, signal);
      overviewCall.catch(() => undefined);
      last = { hooks, ...(last?.fleet ? { fleet: last.fleet } : {}) };
      const covers = coverageNote(hooks);
      coverageEl.hidden = covers === null;
      coverageEl.textContent = covers ?? '';
      if (hooks.hooks.length > 0) {
        show();
        // The fleet answer on its way replaces the one these rows would ask their sparklines over: they wait for it.
        sparkHold = true;
        drawRows();
        sparkHold = false;
        if (performance.getEntriesByName('hookwatch:first-rows').length === 0) performance.mark('hookwatch:first-rows');
      }
      // The figures and charts do not wait for the firing alerts: their markers are drawn as they come (markFiring).
      const [overview, fleet]: [OverviewResponse, FleetSeriesResponse | undefined] = await Promise.all([overviewCall, fleetCall]);
      if (showsSetup(overview, state.filters)) {
        replace(root, h('h1', null, 'Overview'), setupHelp(overview));
        return;
      }
      show();
      // "Show all" pressed while this refresh was under way: it brings every hook too, not the first page alone.
      if (showAll && hooks.nextCursor) hooks = await allPages(hooks, hq, signal);
      last = { hooks, ...(fleet ? { fleet } : {}) };
      lastOverview = overview;
      const now = Date.now();
      replace(kpisEl, ...kpis(overview, hooks.hooks, state.filters, now).map(kpi));
      const vv = versionsView(overview);
      replace(versions,
        h('h3', null, 'Client versions'),
        vv.rows.length === 0 ? h('p', { class: 'muted' }, 'No executions in this range.') : scrollBox('Client versions in the range', h('table', { class: 'data', id: 'versions-table' },
          h('caption', { class: 'sr-only' }, 'Client versions in the range'),
          h('thead', null, h('tr', null, ...['Client', 'Version', 'Executions', 'Without size data', 'Sizes'].map((x) => h('th', { scope: 'col' }, x)))),
          h('tbody', null, ...vv.rows.map((v) => h('tr', { 'data-version': v.version },
            ...v.cells.map((text, i) => h('td', i === 2 || i === 3 ? { class: 'num' } : null, text))))),
        )),
        vv.blind ? h('p', { class: 'warn', id: 'blind-versions' }, vv.blind) : null,
      );
      if (hooks.hooks.length === 0 && !drawEmpty(overview, now)) return;
      fleetPanel.element.hidden = fleet === undefined;
      if (fleet) {
        drawFleet(fleet);
        fleetById = new Map(fleet.hooks.map((x) => [x.id, x]));
        newSparkRound();
        for (const cell of sparkCells.values()) fillSpark(cell);
      }
      if (performance.getEntriesByName('hookwatch:first-charts').length === 0) performance.mark('hookwatch:first-charts');
      if (hooks.hooks.length === 0) return;
      await fitForecasts(hooks.hooks, signal);
      drawRows();
      // The refresh is done once its rows are marked too.
      await firingCall;
    },
    destroy() {
      clearTimeout(typing);
      sparkObserver.disconnect();
      sparkAbort.abort();
      forecasts.clear();
      fleetPanel.destroy();
    },
  };
}
