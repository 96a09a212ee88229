/**
 * The dashboard shell: reads the view from the URL, draws the header (pages, range, filters), mounts the page
 * and refreshes it in place on a timer without touching what the user has chosen.
 */
import { ApiFailure, api } from './api.ts';
import { h, replace, type Attrs, type Child } from './dom.ts';
import { dateTime } from './format.ts';
import type { Page, PageContext, PageFactory } from './page.ts';
import { alertsPage } from './pages/alerts.ts';
import { forwardingPage } from './pages/forwarding.ts';
import { hookPage } from './pages/hook.ts';
import { overviewPage } from './pages/overview.ts';
import {
  RANGE_PRESETS, buildUrl, keptParams, rangeLabel, readState, refreshMs, routePath, type Range, type ViewState,
} from './state.ts';

const root = document.getElementById('app') as HTMLElement;
const pages: Record<string, PageFactory> = { overview: overviewPage, hook: hookPage, alerts: alertsPage, forwarding: forwardingPage };

let page: Page | undefined;
let timer: ReturnType<typeof setTimeout> | undefined;
let inflight: AbortController | undefined;
let generation = 0;
let dimensionList: Promise<string[]> | undefined;

const banner = h('div', { id: 'error-banner', class: 'banner banner-error', role: 'alert', hidden: true });
const updated = h('span', { id: 'last-updated', class: 'muted', 'aria-live': 'polite' });

function dimensions(): Promise<string[]> {
  dimensionList ??= api.dimensions().then((r) => r.dimensions, (err: unknown) => {
    dimensionList = undefined;
    throw err;
  });
  return dimensionList;
}

function navigate(url: string, opts: { replace?: boolean } = {}): void {
  if (opts.replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  render();
}

function header(state: ViewState): HTMLElement {
  const nav = h('nav', { 'aria-label': 'Pages' },
    navLink('/', 'Overview', state.route.page === 'overview' || state.route.page === 'hook', state),
    navLink('/alerts', 'Alerts', state.route.page === 'alerts', state),
    navLink('/forwarding', 'Forwarding', state.route.page === 'forwarding', state),
  );
  return h('header', { class: 'top' },
    h('div', { class: 'brand' }, h('a', { href: buildUrl('/', state), class: 'brand-link', onclick: linkHandler }, 'hookwatch'),
      h('span', { class: 'muted tagline' }, 'hook output delivery')),
    nav,
    rangePicker(state),
    filterBar(state),
    h('div', { class: 'refresh-line' }, updated),
  );
}

function navLink(path: string, text: string, current: boolean, state: ViewState): HTMLAnchorElement {
  return h('a', { href: buildUrl(path, state), 'aria-current': current ? 'page' : undefined, onclick: linkHandler }, text);
}

/** In-app navigation for plain left clicks; modified clicks open tabs as usual. */
function linkHandler(ev: Event): void {
  const e = ev as MouseEvent;
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = (e.currentTarget as HTMLElement).closest('a');
  if (!a || a.origin !== location.origin) return;
  e.preventDefault();
  navigate(a.pathname + a.search);
}

function setRange(state: ViewState, range: Range): void {
  navigate(buildUrl(routePath(state.route), { range, filters: state.filters }, keptParams(state.params)));
}

function toLocalInput(iso: string): string {
  const d = new Date(iso);
  const pad = (n: number): string => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

function rangePicker(state: ViewState): HTMLElement {
  const now = Date.now();
  const customFrom = h('input', { type: 'datetime-local', id: 'range-from', value: toLocalInput(state.range.kind === 'custom' ? state.range.from : new Date(now - 86_400_000).toISOString()) });
  const customTo = h('input', { type: 'datetime-local', id: 'range-to', value: toLocalInput(state.range.kind === 'custom' ? state.range.to : new Date(now).toISOString()) });
  const customError = h('span', { class: 'form-error', role: 'status' });
  const form = h('form', {
    class: 'custom-range',
    onsubmit: (ev: Event) => {
      ev.preventDefault();
      const from = Date.parse(customFrom.value);
      const to = Date.parse(customTo.value);
      if (!Number.isFinite(from) || !Number.isFinite(to) || from >= to) {
        customError.textContent = 'The start must be before the end.';
        return;
      }
      setRange(state, { kind: 'custom', from: new Date(from).toISOString(), to: new Date(to).toISOString() });
    },
  },
  h('label', { for: 'range-from' }, 'From'), customFrom,
  h('label', { for: 'range-to' }, 'To'), customTo,
  h('button', { type: 'submit' }, 'Apply'), customError);
  return h('div', { class: 'range', role: 'group', 'aria-label': `Time range: ${rangeLabel(state.range)}` },
    ...RANGE_PRESETS.map((p) => h('button', {
      type: 'button',
      class: 'range-preset',
      'data-range': p,
      'aria-pressed': state.range.kind === 'preset' && state.range.preset === p ? 'true' : 'false',
      onclick: () => setRange(state, { kind: 'preset', preset: p }),
    }, p)),
    h('details', { class: 'custom', open: state.range.kind === 'custom' }, h('summary', null, 'Custom'), form),
  );
}

function filterBar(state: ViewState): HTMLElement {
  const select = h('select', { id: 'filter-dimension', 'aria-label': 'Filter dimension' });
  const input = h('input', { id: 'filter-value', type: 'text', placeholder: 'value', 'aria-label': 'Filter value', maxlength: 512 });
  void dimensions().then((dims) => {
    for (const d of dims) select.appendChild(h('option', { value: d }, d));
  }, () => undefined);
  const apply = (filters: Record<string, string>): void => navigate(buildUrl(routePath(state.route), { range: state.range, filters }, keptParams(state.params)));
  const chips = Object.entries(state.filters).map(([k, v]) => h('span', { class: 'chip' }, `${k} = ${v}`,
    h('button', { type: 'button', class: 'chip-remove', 'aria-label': `Remove filter ${k}`, onclick: () => {
      const next = { ...state.filters };
      delete next[k];
      apply(next);
    } }, '×')));
  return h('div', { class: 'filters' },
    h('form', { class: 'filter-form', onsubmit: (ev: Event) => {
      ev.preventDefault();
      if (!select.value || !input.value) return;
      apply({ ...state.filters, [select.value]: input.value });
    } }, select, input, h('button', { type: 'submit' }, 'Add filter')),
    ...chips,
  );
}

function showError(err: unknown): void {
  const msg = err instanceof ApiFailure || err instanceof Error ? err.message : String(err);
  banner.hidden = false;
  replace(banner, h('strong', null, 'Could not refresh: '), msg, ' (showing the last data; retrying)');
}

function schedule(state: ViewState, gen: number): void {
  clearTimeout(timer);
  const period = refreshMs(state.params);
  if (period === null) return;
  timer = setTimeout(() => void load(gen), period);
}

async function load(gen: number): Promise<void> {
  if (gen !== generation || !page) return;
  inflight?.abort();
  const ctl = new AbortController();
  inflight = ctl;
  const state = readState(location);
  document.body.setAttribute('aria-busy', 'true');
  try {
    await page.refresh(ctl.signal);
    if (gen !== generation) return;
    banner.hidden = true;
    updated.textContent = `Updated ${dateTime(Date.now())}${refreshMs(state.params) === null ? '' : ' · refreshes itself'}`;
    document.body.dataset['loaded'] = String(Number(document.body.dataset['loaded'] ?? '0') + 1);
  } catch (err) {
    if ((err as Error).name === 'AbortError' || gen !== generation) return;
    showError(err);
  } finally {
    if (gen === generation) {
      document.body.removeAttribute('aria-busy');
      schedule(state, gen);
    }
  }
}

function render(): void {
  generation++;
  const gen = generation;
  clearTimeout(timer);
  inflight?.abort();
  page?.destroy();
  page = undefined;
  banner.hidden = true;
  const state = readState(location);
  const main = h('main', { id: 'main', tabindex: '-1' });
  replace(root, h('a', { href: '#main', class: 'skip' }, 'Skip to content'), header(state), banner, main);
  const link = (url: string, attrs: Attrs | null, ...children: Child[]): HTMLAnchorElement => h('a', { ...attrs, href: url, onclick: linkHandler }, ...children);
  const ctx: PageContext = { state, navigate, dimensions, link };
  const factory = pages[state.route.page];
  if (!factory) {
    document.title = 'Not found · hookwatch';
    replace(main, h('section', { class: 'panel empty' }, h('h1', null, 'No such page'),
      h('p', null, h('a', { href: '/', onclick: linkHandler }, 'Go to the overview'))));
    return;
  }
  page = factory(main, ctx);
  void load(gen);
}

window.addEventListener('popstate', render);
render();
