/**
 * The dashboard shell: reads the view from the URL, draws the header (pages, range, filters), mounts the page
 * and refreshes it in place on a timer without touching what the user has chosen. Importing it does nothing:
 * `start()` (called by entry.ts) owns the state of one running dashboard; what the header decides from the URL
 * and the user's input is in shell-state.ts, pure and unit-tested; this file applies it to the DOM, history
 * and timers.
 */
import type { AlertSummary } from '../../shared/src/api.ts';
import { ApiFailure, api } from './api.ts';
import { h, replace, type Attrs, type Child } from './dom.ts';
import { ago, inputDateTime, setTimeZone, timeOfDaySeconds, timeZone, timeZoneLabel, type TimeZoneChoice } from './format.ts';
import type { Page, PageContext, PageFactory } from './page.ts';
import { alertsPage } from './pages/alerts.ts';
import { stateNote } from './pages/alerts-state.ts';
import { forwardingPage } from './pages/forwarding.ts';
import { hookPage } from './pages/hook.ts';
import { overviewPage } from './pages/overview.ts';
import {
  BUILD_RECHECK_MS, REFRESH_CHOICES, THEME_LABEL, UPDATE_AGAIN_NOTICE, UPDATE_NOTICE, addFilter, customFieldBounds, customRangeFrom, customRunChoices, failureNote, filterProblem, firingBadge, firingUnknown, filtersApply, filtersUrl, ignoredViewNote, isPlainClick, keptViewFor, keptViewText, nextTheme, notFilteredNote, notFoundView,
  rangeUrl, refreshParam, refreshView, refusedRequest, reloadHeldUntil, reloadedText, removeFilter, retryDelay, selfReloadDue, signInReloadFrom, signedOutNote, toggledRefresh, updatedText, withRefresh, zoneChoice, type CustomField, type FiringBadge, type KeptView, type RunChoice,
} from './shell-state.ts';
import { HOOK_PARAM, RANGE_PRESETS, buildUrl, keptParams, rangeLabel, readState, refreshMs, shownValue, type ViewState } from './state.ts';
import { applyTheme, setTheme, themeChoice } from './theme.ts';

const TZ_KEY = 'hookwatch.tz';
/** Where the view a reload comes back to is kept, for the tab (sessionStorage). */
const VIEW_KEY = 'hookwatch.view';
/** The builds the tab reloaded for (reloadedBuilds), for the tab (sessionStorage). */
const RELOADED_KEY = 'hookwatch.reloadedFor';
/** When the tab reloaded itself to sign in again through a sign-in proxy, until data shows (sessionStorage). */
const SIGN_IN_RELOAD_KEY = 'hookwatch.signInReloadAt';
/** How many history entries' views a page keeps for back and forward (keepEntryView). */
const MAX_ENTRY_VIEWS = 100;
/** How often relative times and the age of the data shown are read again. */
const AGE_TICK_MS = 5000;
/**
 * Two ticks this far apart mean the page's timers stood still while the clock ran on (the computer slept): the
 * data shown is as old as the sleep, and is refreshed at once rather than when the refresh timer, held back by as
 * long, comes due.
 */
const WAKE_GAP_MS = 60_000;
/** A screen reader hears that a refresh changed the data at most this often (a recovery is said at once). */
const NEWS_MIN_MS = 60_000;

/**
 * How often a page that keeps getting answers asks which dashboard hookwatch serves; it asks at once when hookwatch
 * answers again after a failure (a restart, often a new version).
 */
const BUILD_CHECK_MS = 10 * 60_000;

/**
 * What a person using the page does: any of these puts off a reload to a new version. Not `scroll`, which the page
 * causes too (a refresh that changes the height above what is shown): a person scrolls with a wheel, keys, a touch
 * or the pointer.
 */
const USE_EVENTS = ['pointerdown', 'pointermove', 'keydown', 'wheel', 'touchstart', 'input'] as const;
/** Keys that scroll the page (a use of the page that moves it, as a wheel or a touch does). */
const SCROLL_KEYS = new Set(['ArrowUp', 'ArrowDown', 'PageUp', 'PageDown', 'Home', 'End', ' ']);

/** The fields a person types text in. */
const TEXT_FIELDS = new Set(['text', 'search', 'email', 'number', 'password', 'tel', 'url']);

/** The controls a keyboard reaches. */
const FOCUSABLE = 'a[href], button, input, select, textarea, summary, [tabindex]:not([tabindex="-1"])';

const PAGES: Record<string, PageFactory> = { overview: overviewPage, hook: hookPage, alerts: alertsPage, forwarding: forwardingPage };

/** Text that is read again as time passes, written only when it changed. */
function setText(el: HTMLElement, text: string): void {
  if (el.textContent !== text) el.textContent = text;
}

function storedZone(): TimeZoneChoice {
  try {
    return localStorage.getItem(TZ_KEY) === 'UTC' ? 'UTC' : 'local';
  } catch {
    return 'local';
  }
}

/** A running dashboard. */
export interface Dashboard {
  /** Stops refreshing and listening to history (the page as drawn stays). */
  stop(): void;
}

/** Starts the dashboard in `root`: draws the page the URL names, then keeps it fresh. */
export function start(root: HTMLElement): Dashboard {
  setTimeZone(storedZone());
  applyTheme();

  let page: Page | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  /** The fetch under way: a whole refresh, or the part of the page a change in place depends on. */
  let inflight: { ctl: AbortController; whole: boolean } | undefined;
  let generation = 0;
  /** The dimension names once the API gave them (they change only with hookwatch's configuration). */
  let dimensionList: string[] | undefined;
  /** What waits for the dimension names until a request gets them, and whether one is under way. */
  let dimensionsWanted: PromiseWithResolvers<string[]> | undefined;
  let dimensionsAsking = false;
  let lastUpdated: number | undefined;
  /** The generation whose page has drawn data at least once. */
  let shownGeneration = -1;
  /** The header drawn for the URL; its links follow when a page changes the URL in place. */
  let headerEl: HTMLElement | undefined;
  /**
   * What the header shows of the time now, read again at each tick: a page left open for days crosses changes of
   * daylight saving time, and its custom range would otherwise offer the last day of when it was opened.
   */
  let headerClocks: (() => void)[] = [];
  /**
   * What the header's Alerts link says of the alerts firing (firingBadge), as the last refresh found them, or that
   * it could not (firingUnknown): kept from page to page, the link drawn anew with each header says it at once.
   */
  let firing: FiringBadge = firingBadge([]);
  const firingCount = h('span', { class: 'firing-count', hidden: true });
  let alertsLink: HTMLAnchorElement | undefined;
  /** The firing alerts the refresh under way (or the last) asked for, for the page (PageContext.firing). */
  let firingNow: Promise<AlertSummary[] | null> = Promise.resolve(null);

  // What went wrong is announced once, in the alert; the age of the data and the next try, which change every few
  // seconds during an outage, are beside it, outside the alert, so a screen reader does not repeat the failure.
  const alertText = h('span', { id: 'error-alert', role: 'alert' });
  const failureAge = h('span', { id: 'error-age' });
  /** What the reader can do about the failure (reload to sign in). */
  const failureAction = h('span', { id: 'error-action' });
  const banner = h('div', { id: 'error-banner', class: 'banner banner-error', hidden: true }, alertText, failureAge, failureAction);
  // The age of the data counts on every few seconds: in a live region a screen reader would read it out each time.
  const updated = h('span', { id: 'last-updated', class: 'muted' });
  /** The dashboard build this page runs (index.html names it); hookwatch asked for its own when, and whether now. */
  const build = document.querySelector<HTMLMetaElement>('meta[name="hookwatch-build"]')?.content;
  let buildAskedAt = Date.now();
  let buildAsking = false;
  /**
   * The last ask got no usable answer (hookwatch away or starting, a gateway's page in its place): it does not use up
   * the minute between asks (BUILD_RECHECK_MS), and the next refresh that fails asks again.
   */
  let buildUnanswered = false;
  /** The build hookwatch serves, once it is another than this page runs. */
  let served: string | undefined;
  const updateNote = h('div', { id: 'update-banner', class: 'banner banner-update', hidden: true });
  /** When the page said a newer dashboard is served, and when it was last used (a pointer, a key, a scroll). */
  let updateAt: number | undefined;
  let usedAt = -Infinity;
  /** Where the pointer last moved to, on the screen. */
  let pointerAt = '';
  /** Text fields typed in, and selects changed, in forms not sent: a reload would lose what they hold. */
  const unsent = new Set<HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement>();
  // What a screen reader is told of refreshes instead: one that changed what the page shows (at most once a minute)
  // and hookwatch answering again after a failure (the failure itself is the alert's).
  const news = h('div', { id: 'refresh-news', class: 'sr-only', role: 'status', 'aria-live': 'polite', 'aria-atomic': 'true' });
  /** The page's text as last shown, without relative times: a refresh that leaves it as it was changed nothing. */
  let shownText: string | undefined;
  /** A refresh changed the page since the last announcement, not said yet (said when the minute is up). */
  let newsDue: number | undefined;
  let newsAt = -Infinity;

  /**
   * The dimension names, for the filter and breakdown lists. A request that fails leaves the promise waiting, and
   * the next refresh asks again: lists drawn while hookwatch was away fill in once it answers.
   */
  function dimensions(): Promise<string[]> {
    if (dimensionList) return Promise.resolve(dimensionList);
    dimensionsWanted ??= Promise.withResolvers();
    askDimensions();
    return dimensionsWanted.promise;
  }

  /**
   * A new version of hookwatch deployed since the page was opened: the page runs the dashboard it loaded until it is
   * reloaded, so it says so, once, offers the reload, and reloads by itself once left unused (reloadIfUnused). The
   * URL keeps the view. For a build the tab reloaded for within the hour (reloadHeldUntil), the page says the
   * reload brought back the build it runs, and reloads by itself only once that hour is over.
   */
  function checkBuild(): void {
    if (!build || buildAsking || !updateNote.hidden) return;
    buildAsking = true;
    buildAskedAt = Date.now();
    api.build().then((r) => {
      buildUnanswered = typeof (r as Partial<typeof r> | undefined)?.build !== 'string';
      if (buildUnanswered || r.build === build) return;
      const now = Date.now();
      const held = reloadHeldUntil(reloadedFor(), r.build, now);
      const notice = held === undefined ? UPDATE_NOTICE : UPDATE_AGAIN_NOTICE;
      served = r.build;
      updateNote.hidden = false;
      replace(updateNote, `${notice} `, h('button', { type: 'button', class: 'reload', onclick: reload }, 'Reload now'));
      say(notice, now);
      updateAt = held ?? now;
      reloadIfUnused();
    }, (err: unknown) => {
      // Network errors, 5xx and pages that are not JSON are not hookwatch telling which build it serves; a refusal
      // in JSON (404 from a version without the route, 401) is, and waits the minute.
      buildUnanswered = !(err instanceof ApiFailure && err.status > 0 && err.status < 500 && !err.notJson);
    }).finally(() => {
      buildAsking = false;
    });
  }

  /**
   * The page reloading itself (or at its button): it comes back to the view it shows (keepView), and the tab
   * remembers the build served it reloads for.
   */
  let reloading = false;
  function reload(): void {
    reloading = true;
    try {
      if (served !== undefined) sessionStorage.setItem(RELOADED_KEY, reloadedText(reloadedFor(), served, Date.now()));
    } catch {
      // Not remembered: a reload that brings back the build the page runs may be followed by another.
    }
    location.reload();
  }

  /** The builds the tab reloaded for, as reloadedText wrote them; null when sessionStorage is not to be had. */
  function reloadedFor(): string | null {
    try {
      return sessionStorage.getItem(RELOADED_KEY);
    } catch {
      return null;
    }
  }

  /**
   * A newer dashboard is served, or a sign-in proxy's session ended (signInAt), and nobody is using this page
   * (selfReloadDue): it reloads, on the same URL; through the proxy, to sign in again.
   */
  function reloadIfUnused(): void {
    const signIn = signedOut ? signInAt : undefined;
    if (updateAt === undefined && signIn === undefined) return;
    // A field gone (another page drawn), emptied, or in a part closed for good (a silence form cancelled) holds nothing.
    for (const f of unsent) if (!f.isConnected || f.value === '' || f.closest('[hidden]')) unsent.delete(f);
    const due = (noticeAt: number | undefined): boolean =>
      noticeAt !== undefined && selfReloadDue({ nowMs: Date.now(), noticeAt, usedAt, hidden: document.hidden, typing: unsent.size > 0 });
    if (due(updateAt)) reload();
    else if (due(signIn)) {
      storeSignInReload(String(Date.now()));
      reload();
    }
  }

  /** When the tab last reloaded itself to sign in again and has shown no data since; null when not, or not to be had. */
  function signInReloadAt(): string | null {
    try {
      return sessionStorage.getItem(SIGN_IN_RELOAD_KEY);
    } catch {
      return null;
    }
  }

  /** Remembers a reload to sign in again (a time), or forgets it (null) once data shows. */
  function storeSignInReload(at: string | null): void {
    try {
      if (at === null) sessionStorage.removeItem(SIGN_IN_RELOAD_KEY);
      else sessionStorage.setItem(SIGN_IN_RELOAD_KEY, at);
    } catch {
      // Not remembered: a reload that did not sign in again may be followed by another, once unused again.
    }
  }

  /** A use of the page; not a pointer "moving" where it already was, as the browser reports when the page moves under it. */
  function onUse(ev: Event): void {
    if (ev instanceof PointerEvent && ev.type === 'pointermove') {
      const at = `${ev.screenX},${ev.screenY}`;
      if (at === pointerAt) return;
      pointerAt = at;
    }
    usedAt = Date.now();
    const field = ev.target instanceof HTMLInputElement || ev.target instanceof HTMLTextAreaElement || ev.target instanceof HTMLSelectElement;
    if (ev.type === 'wheel' || ev.type === 'touchstart' || (ev instanceof KeyboardEvent && SCROLL_KEYS.has(ev.key) && !field)) scrolledByReader = true;
  }

  /**
   * Text typed in a form, or a choice made in one of its selects (the offset of a time the clocks show twice, a
   * silence's duration), is kept from a reload until the form is sent and taken (PageContext.sent), or its fields
   * are gone (a new view drawn once a filter is added or a custom range applied). Not once merely submitted: a form
   * refused (a silence with no matcher, the API unavailable) keeps its text to be corrected and sent again. Not the
   * hook search's: the URL takes it as it is typed, and a reload keeps it.
   */
  function onInput(ev: Event): void {
    const f = ev.target;
    const field = f instanceof HTMLTextAreaElement || f instanceof HTMLSelectElement || (f instanceof HTMLInputElement && TEXT_FIELDS.has(f.type));
    if (field && f.closest('form:not([role="search"])')) unsent.add(f);
  }

  function sent(form: HTMLFormElement): void {
    for (const f of unsent) if (f.form === form) unsent.delete(f);
  }

  function askDimensions(): void {
    if (!dimensionsWanted || dimensionsAsking) return;
    const wanted = dimensionsWanted;
    dimensionsAsking = true;
    api.dimensions().then((r) => {
      dimensionList = r.dimensions;
      dimensionsWanted = undefined;
      wanted.resolve(r.dimensions);
    }, () => undefined).finally(() => {
      dimensionsAsking = false;
    });
  }

  function navigate(url: string, opts: { replace?: boolean } = {}): void {
    if (opts.replace) history.replaceState(history.state, '', url);
    else {
      keepEntryView();
      entryId = newEntryId();
      history.pushState({ id: entryId }, '', url);
    }
    render();
  }

  /**
   * A change a page made in place (the overview's search): the URL takes it, and the header's links follow it (its
   * buttons and forms read the URL when used), so they carry it as they carry the filters. Nothing else is drawn
   * again: what is half typed in the header's filter or custom range, and the focus, stay.
   */
  function replaceUrl(url: string): void {
    history.replaceState(history.state, '', url);
    entryUrl = location.href;
    if (!headerEl) return;
    const state = readState(location);
    for (const a of headerEl.querySelectorAll<HTMLAnchorElement>('a[data-path]')) a.href = buildUrl(a.dataset['path'] ?? '/', state, keptParams(state.params));
  }

  /** The view as the URL states it now: a page may have changed it in place since the header was drawn. */
  const current = (): ViewState => readState(location);

  /**
   * What the header says of a range or refresh interval of the URL the page does not take (ignoredViewNote), or of
   * an alert state that is not one (stateNote): kept as the URL changes in place (an interval picked), gone once
   * what it names is replaced.
   */
  const ignoredNote = h('p', { class: 'filters muted small', id: 'url-ignored', hidden: true });
  function drawIgnored(): void {
    const { params, route } = current();
    const notes = [ignoredViewNote(params), route.page === 'alerts' ? stateNote(params) : null].filter((n) => n !== null);
    const note = notes.length ? notes.join(' ') : null;
    ignoredNote.hidden = note === null;
    if (ignoredNote.textContent !== (note ?? '')) ignoredNote.textContent = note ?? '';
  }

  function header(state: ViewState): HTMLElement {
    headerClocks = [];
    drawIgnored();
    const nav = h('nav', { 'aria-label': 'Pages' },
      navLink('/', 'Overview', state.route.page === 'overview' || state.route.page === 'hook', state),
      alertsNavLink(state),
      navLink('/forwarding', 'Forwarding', state.route.page === 'forwarding', state),
    );
    return h('header', { class: 'top' },
      h('div', { class: 'brand' }, h('a', { href: buildUrl('/', state, keptParams(state.params)), 'data-path': '/', class: 'brand-link', onclick: linkHandler }, 'hookwatch'),
        h('span', { class: 'muted tagline' }, 'hook output delivery')),
      nav,
      rangePicker(state),
      zonePicker(),
      filterBar(state),
      ignoredNote,
      h('div', { class: 'refresh-line' }, refreshControl(state), updated, themeToggle()),
    );
  }

  /** Times shown in the browser's zone or in UTC, beside the range they qualify. */
  function zonePicker(): HTMLElement {
    const localLabel = (): string => `local: ${timeZoneLabel(Date.now(), 'local')}`;
    const local = h('option', { value: 'local', selected: timeZone() === 'local' }, localLabel());
    headerClocks.push(() => setText(local, localLabel()));
    const select = h('select', { id: 'time-zone', 'aria-label': 'Time zone' }, local, h('option', { value: 'UTC', selected: timeZone() === 'UTC' }, 'UTC'));
    select.addEventListener('change', () => {
      const z = zoneChoice(select.value);
      try {
        localStorage.setItem(TZ_KEY, z);
      } catch {
        // Not kept across reloads; still applies now.
      }
      setTimeZone(z);
      render();
    });
    return h('div', { class: 'zone' }, h('span', { class: 'zone-label', id: 'time-zone-label' }, 'Times in'), select);
  }

  /** Light, dark, or whatever the system prefers. */
  function themeToggle(): HTMLElement {
    const b = h('button', { type: 'button', id: 'theme-toggle', class: 'header-button' });
    const label = (): void => {
      b.textContent = THEME_LABEL[themeChoice()];
      b.setAttribute('aria-label', `${THEME_LABEL[themeChoice()]} (change)`);
    };
    label();
    b.addEventListener('click', () => {
      setTheme(nextTheme(themeChoice()));
      label();
      recolour();
    });
    return b;
  }

  /** Refresh interval, pause and refresh now; kept in the URL's `refresh=` without redrawing the page. */
  function refreshControl(state: ViewState): HTMLElement {
    const view = refreshView(state.params);
    const select = h('select', { id: 'refresh-interval', 'aria-label': 'Refresh interval', disabled: view.paused },
      ...REFRESH_CHOICES.map(([v, text]) => h('option', { value: v, selected: view.selected === v }, text)));
    if (view.extra) select.appendChild(h('option', { value: view.extra.value, selected: true }, view.extra.text));
    const setRefresh = (value: string | undefined): void => {
      history.replaceState(history.state, '', withRefresh(location, value));
      entryUrl = location.href;
      const next = readState(location);
      const nextView = refreshView(next.params);
      pause.textContent = nextView.pauseLabel;
      pause.setAttribute('aria-pressed', nextView.paused ? 'true' : 'false');
      select.disabled = nextView.paused;
      schedule(next, generation);
      showUpdated(next);
      drawIgnored();
    };
    select.addEventListener('change', () => setRefresh(refreshParam(select.value)));
    const pause = h('button', { type: 'button', id: 'refresh-pause', class: 'header-button', 'aria-pressed': view.paused ? 'true' : 'false' }, view.pauseLabel);
    pause.addEventListener('click', () => setRefresh(toggledRefresh(readState(location).params, select.value)));
    const now = h('button', { type: 'button', id: 'refresh-now', class: 'header-button' }, 'Refresh now');
    now.addEventListener('click', () => void load(generation));
    return h('div', { class: 'refresh-control', role: 'group', 'aria-label': 'Refresh' }, h('label', { for: 'refresh-interval' }, 'Refresh'), select, pause, now);
  }

  /** What the page shows, as text, without the relative times that count on by themselves. */
  function pageText(): string {
    if (!content) return '';
    const parts: string[] = [];
    const walk = document.createTreeWalker(content, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
      acceptNode: (n) => n instanceof HTMLElement && n.dataset['ago'] !== undefined ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT,
    });
    for (let n = walk.nextNode(); n; n = walk.nextNode()) if (n.nodeType === Node.TEXT_NODE) parts.push(n.nodeValue ?? '');
    return parts.join('\u0000');
  }

  function say(text: string, now: number): void {
    news.textContent = text;
    newsAt = now;
    newsDue = undefined;
  }

  /** A change not said yet is said once a minute has passed since the last announcement. */
  function sayNews(now: number): void {
    if (newsDue !== undefined && now - newsAt >= NEWS_MIN_MS) say(`Data refreshed at ${timeOfDaySeconds(newsDue)}: it changed.`, now);
  }

  /**
   * A whole refresh came through: said at once if it ends a failure, otherwise only if the page shows something
   * else than before (not its first drawing), and no more than once a minute.
   */
  function refreshNews(recovered: boolean, firstShown: boolean): void {
    const now = Date.now();
    const text = pageText();
    const changed = !firstShown && shownText !== undefined && text !== shownText;
    shownText = text;
    if (recovered) say(`Data refreshed at ${timeOfDaySeconds(now)}: hookwatch answers again${changed || newsDue !== undefined ? ', and the data changed' : ''}.`, now);
    else if (changed) {
      newsDue = now;
      sayNews(now);
    }
  }

  function showUpdated(state: ViewState): void {
    // The age of the data this page shows: until its first refresh succeeds it shows none (the failure banner says
    // "nothing to show yet"), and the page drawn before it is not its age.
    const u = updatedText(shownGeneration === generation ? lastUpdated : undefined, state.params, Date.now());
    updated.textContent = u?.text ?? '';
    if (u) updated.title = u.title;
    else updated.removeAttribute('title');
  }

  /** The Alerts link, with the number of alerts firing beside it (drawFiring). */
  function alertsNavLink(state: ViewState): HTMLAnchorElement {
    alertsLink = navLink('/alerts', 'Alerts', state.route.page === 'alerts', state);
    // Spaced by text, not a margin: the link shows "Alerts 2", which its name ("Alerts, 2 firing") holds.
    alertsLink.append(' ', firingCount);
    drawFiring();
    return alertsLink;
  }

  /**
   * The header says how many alerts fire ("Alerts 2", read "Alerts, 2 firing"), nothing more when none does, "Alerts
   * ?" when it could not be read.
   */
  function drawFiring(): void {
    setText(firingCount, firing.text);
    firingCount.hidden = firing.text === '';
    firingCount.classList.toggle('unknown', firing.count === null);
    if (!alertsLink) return;
    if (firing.text !== '') alertsLink.setAttribute('aria-label', firing.label);
    else alertsLink.removeAttribute('aria-label');
    if (firing.title === null) alertsLink.removeAttribute('title');
    else alertsLink.title = firing.title;
  }

  /**
   * The firing alerts, asked with each whole refresh beside the page's own data: as often as the page refreshes,
   * never from a tab in the background or while paused. The header counts them; the page may mark what they are
   * about (PageContext.firing). Null when the alerts API could not answer: the header says the alert state is
   * unknown (firingUnknown), whatever the rest of the page loaded, until an answer counts again; a hookwatch
   * without one (404) has none firing.
   */
  function askFiring(gen: number, signal: AbortSignal): Promise<AlertSummary[] | null> {
    const asked = api.alerts({ state: 'firing' }, signal).then((r) => ({ alerts: r.alerts, badge: firingBadge(r.alerts) }), (err: unknown) => (
      err instanceof ApiFailure && err.status === 404 ? { alerts: [], badge: firingBadge([]) } : { alerts: null, badge: firingUnknown((err as Error).message) }));
    void asked.then(({ badge }) => {
      if (gen !== generation || signal.aborted) return;
      firing = badge;
      drawFiring();
    });
    return asked.then((r) => r.alerts);
  }

  function navLink(path: string, text: string, current: boolean, state: ViewState): HTMLAnchorElement {
    return h('a', { href: buildUrl(path, state, keptParams(state.params)), 'data-path': path, 'aria-current': current ? 'page' : undefined, onclick: linkHandler }, text);
  }

  /** In-app navigation for plain left clicks; modified clicks open tabs as usual. */
  function linkHandler(ev: Event): void {
    const e = ev as MouseEvent;
    if (!isPlainClick(e)) return;
    const a = (e.currentTarget as HTMLElement).closest('a');
    if (!a || a.origin !== location.origin) return;
    e.preventDefault();
    // The fragment too: a link to a part of a page (a hook's alert timeline) is scrolled to once it is drawn.
    navigate(a.pathname + a.search + a.hash);
  }

  function rangePicker(state: ViewState): HTMLElement {
    const bounds = customFieldBounds(state.range, Date.now());
    const from = customField('range-from', 'start', bounds.from);
    const to = customField('range-to', 'end', bounds.to);
    const zoneNote = h('span', { class: 'muted small' }, timeZoneLabel());
    /** Each field's time the clocks show twice gets its offsets offered beside it, the one taken selected. */
    const showRuns = (): void => {
      const choices = customRunChoices(from.field, to.field, Date.now());
      from.showRuns(choices.from);
      to.showRuns(choices.to);
    };
    // A preset's fields offer the last day until now, kept so while the page is open until the user types in them
    // or chooses an offset (a time an hour before now, chosen, does not follow the clock).
    let typed = false;
    const edited = (): void => {
      typed = true;
      showRuns();
    };
    for (const f of [from, to]) {
      f.input.addEventListener('input', edited);
      f.offset.addEventListener('change', edited);
    }
    showRuns();
    headerClocks.push(() => {
      setText(zoneNote, timeZoneLabel());
      if (!typed && state.range.kind !== 'custom') {
        const now = customFieldBounds(state.range, Date.now());
        from.fill(now.from);
        to.fill(now.to);
      }
      showRuns();
    });
    const customError = h('span', { class: 'form-error', role: 'status' });
    const form = h('form', {
      class: 'custom-range',
      onsubmit: (ev: Event) => {
        ev.preventDefault();
        const r = customRangeFrom(from.field, to.field, Date.now());
        if ('error' in r) customError.textContent = r.error;
        else navigate(rangeUrl(current(), r.range));
      },
    },
    h('span', { class: 'range-field' }, h('label', { for: 'range-from' }, 'From'), from.input, from.offset),
    h('span', { class: 'range-field' }, h('label', { for: 'range-to' }, 'To'), to.input, to.offset),
    zoneNote,
    h('button', { type: 'submit', class: 'apply' }, 'Apply'), customError);
    return h('div', { class: 'range', role: 'group', 'aria-label': `Time range: ${rangeLabel(state.range)}` },
      ...RANGE_PRESETS.map((p) => h('button', {
        type: 'button',
        class: 'range-preset',
        'data-range': p,
        'aria-pressed': state.range.kind === 'preset' && state.range.preset === p ? 'true' : 'false',
        onclick: () => navigate(rangeUrl(current(), { kind: 'preset', preset: p })),
      }, p)),
      customPopover(form, state.range.kind === 'custom'),
    );
  }

  /**
   * A custom-range field filled with `ms`: a text input in the dashboard's own DD/MM/YYYY HH:MM and zone (a
   * datetime-local input follows the browser's locale, MM/DD and 12-hour, and always the browser's zone), and beside
   * it the offsets of a time in it that the clocks show twice, shown only then. Its CustomField keeps the instant it
   * was filled with while its text is as filled, and the offset chosen.
   */
  function customField(id: string, which: string, ms: number): { input: HTMLInputElement; offset: HTMLSelectElement; field: CustomField; fill(ms: number): void; showRuns(c: RunChoice | null): void } {
    const input = h('input', {
      type: 'text', id, value: inputDateTime(ms), inputmode: 'numeric', autocomplete: 'off', spellcheck: 'false',
      placeholder: 'DD/MM/YYYY HH:MM', size: 16,
    });
    const offset = h('select', { id: `${id}-offset`, class: 'range-offset', hidden: true });
    const field: CustomField = { text: input.value, filled: { text: input.value, ms } };
    input.addEventListener('input', () => void (field.text = input.value));
    offset.addEventListener('change', () => void (field.run = Number(offset.value)));
    return {
      input, offset, field,
      fill(next: number): void {
        const text = inputDateTime(next);
        if (input.value !== text) input.value = text;
        Object.assign(field, { text, filled: { text, ms: next } });
      },
      showRuns(c: RunChoice | null): void {
        offset.hidden = c === null;
        if (c === null) return;
        const label = `Offset of the ${which}: the clocks show ${input.value.trim()} twice`;
        offset.title = label;
        offset.setAttribute('aria-label', label);
        const texts = c.offsets.map((o, i) => `${o} (${i === 0 ? 'first' : 'second'})`);
        if ([...offset.options].map((o) => o.text).join() !== texts.join()) replace(offset, ...texts.map((t, i) => h('option', { value: String(i) }, t)));
        offset.value = String(c.run);
      },
    };
  }

  /**
   * The Custom range popover: opened by the user only (a custom range from a link, a zoom or a bar click does not
   * cover the header's controls with it), and closed again by Escape, by the focus moving on to a control outside it
   * (which it would cover) or by a click outside it; the focus leaving the page (to a picker the browser draws, or
   * another window) keeps it open. With a custom range shown, its summary is the range control marked current, as
   * a preset's button is pressed.
   */
  function customPopover(form: HTMLElement, current: boolean): HTMLDetailsElement {
    const summary = h('summary', { 'aria-current': current ? 'true' : undefined }, 'Custom');
    const details = h('details', { class: 'custom' }, summary, form);
    details.addEventListener('keydown', (ev) => {
      if (ev.key !== 'Escape' || !details.open) return;
      ev.preventDefault();
      details.open = false;
      summary.focus();
    });
    details.addEventListener('focusout', (ev) => {
      if (ev.relatedTarget instanceof Node && !details.contains(ev.relatedTarget)) details.open = false;
    });
    const outside = (ev: Event): void => {
      if (details.isConnected && ev.target instanceof Node && details.contains(ev.target)) return;
      details.open = false;
      document.removeEventListener('pointerdown', outside, true);
    };
    details.addEventListener('toggle', () => {
      if (details.open && details.isConnected) document.addEventListener('pointerdown', outside, true);
      else document.removeEventListener('pointerdown', outside, true);
    });
    return details;
  }

  function filterBar(state: ViewState): HTMLElement | null {
    if (!filtersApply(state.route)) {
      // Chips here would claim a filtering the page does not do; the filters stay in the URL for the way back.
      const note = notFilteredNote(state.filters, state.route.page === 'alerts' && state.params.has(HOOK_PARAM));
      return note === null ? null : h('p', { class: 'filters muted small', id: 'filters-not-applied' }, note);
    }
    const select = h('select', { id: 'filter-dimension', 'aria-label': 'Filter dimension' });
    const input = h('input', { id: 'filter-value', type: 'text', placeholder: 'value', 'aria-label': 'Filter value', 'aria-describedby': 'filter-problem', maxlength: 512 });
    // "(not set)": the events without the dimension or with it empty, which no typed value can name.
    const notSet = h('input', { id: 'filter-not-set', type: 'checkbox', onchange: () => void (input.disabled = notSet.checked) });
    void dimensions().then((dims) => {
      for (const d of dims) select.appendChild(h('option', { value: d }, d));
    });
    const chips = Object.entries(state.filters).map(([k, v]) => h('span', { class: 'chip' }, `${k} = ${shownValue(v)}`,
      h('button', { type: 'button', class: 'chip-remove', 'aria-label': `Remove filter ${k}`, onclick: () => navigate(filtersUrl(current(), removeFilter(state.filters, k))) }, '×')));
    const problem = h('span', { class: 'form-error', id: 'filter-problem', role: 'status' });
    return h('div', { class: 'filters' },
      h('form', { class: 'filter-form', onsubmit: (ev: Event) => {
        ev.preventDefault();
        const next = addFilter(state.filters, select.value, input.value, notSet.checked);
        problem.textContent = filterProblem(select.value, input.value, notSet.checked) ?? '';
        if (next) navigate(filtersUrl(current(), next));
      } }, select, input, h('label', { class: 'not-set', title: 'Events without this dimension, or with it empty' }, notSet, '(not set)'), h('button', { type: 'submit' }, 'Add filter'), problem),
      ...chips,
    );
  }

  /** The page's content, where a page says what stops it from showing anything. */
  let content: HTMLElement | undefined;
  /**
   * Signed out (401, or a sign-in proxy answering for hookwatch): polling stops, since every request would fail the
   * same way until the page is loaded again; the last data stays, or the page says why it shows none. Signed out by
   * a proxy, the page reloads by itself once unused (signInReloadFrom), as for a new version: the proxy takes the
   * reload to its login page, or, while the identity provider still knows the browser, straight back.
   */
  function showSignedOut(err: ApiFailure, gen: number): void {
    const reloadButton = (): HTMLButtonElement => h('button', { type: 'button', class: 'reload', onclick: reload }, 'Reload to sign in');
    banner.hidden = false;
    replace(alertText, h('strong', null, 'Signed out: '), err.message);
    signedOutGen = gen;
    if (err.signIn === 'proxy') signInAt ??= signInReloadFrom(signInReloadAt(), Date.now());
    drawSignedOut();
    replace(failureAction, ' ', reloadButton());
    if (gen !== shownGeneration && content) {
      replace(content, h('section', { class: 'panel empty', id: 'signed-out' }, h('h1', null, 'Signed out'), h('p', null, err.message, '. '), reloadButton()));
    }
  }

  /** Signed out: the age of the data the page shows, outside the alert, counting on as a failure's does. */
  function drawSignedOut(): void {
    if (!signedOut || banner.hidden) return;
    failureAge.textContent = ` (${signedOutNote(signedOutGen === shownGeneration ? lastUpdated : undefined, Date.now(), signInAt)})`;
  }

  /** Refreshes that failed in a row (the wait between tries grows with them), and the last failure shown. */
  let failures = 0;
  let failure: { msg: string; gen: number; part: boolean; refused: boolean } | undefined;
  /** How long the last failure asked to wait before the next try (its Retry-After), when it said. */
  let retryAfterMs: number | undefined;
  /** The last refresh failed though hookwatch answered (showError): which dashboard it serves was asked then. */
  let answeredFailure = false;
  let signedOut = false;
  /** The generation of the page that was signed out. */
  let signedOutGen = -1;
  /** Signed out by a sign-in proxy: from when the page may reload itself to sign in again (signInReloadFrom). */
  let signInAt: number | undefined;

  /**
   * The failure banner: what failed (the alert, rewritten only when that changes) and, outside the alert, how old
   * the data on the page is (or that there is none) and when it tries again.
   */
  function drawFailure(): void {
    if (!failure) return;
    banner.hidden = false;
    const said = `Could not refresh: ${failure.msg}`;
    if (alertText.textContent !== said) replace(alertText, h('strong', null, 'Could not refresh: '), failure.msg);
    const note = failureNote({ lastUpdated: failure.gen === shownGeneration ? lastUpdated : undefined, nowMs: Date.now(), periodMs: refreshMs(readState(location).params), failures, refused: failure.refused, retryAfterMs });
    failureAge.textContent = ` (${note})`;
  }

  /** No failure to show: the next one is announced again, even with the same message. */
  function hideBanner(): void {
    banner.hidden = true;
    replace(alertText);
    replace(failureAge);
    replace(failureAction);
  }

  function showError(err: unknown, gen: number, part = false): void {
    if (err instanceof ApiFailure && err.signedOut) {
      signedOut = true;
      failure = undefined;
      showSignedOut(err, gen);
      reloadIfUnused();
      return;
    }
    failures++;
    // A part refused leaves the whole refresh, another request, to its timer.
    const refused = !part && refusedRequest(err);
    retryAfterMs = err instanceof ApiFailure ? err.retryAfterMs : undefined;
    failure = { msg: failureMessage(err), gen, part, refused };
    drawFailure();
    if (refused && gen !== shownGeneration && content) showRefused(err, content);
    // hookwatch answered, and not what this page asks for: a new version deployed answers so until the page runs its
    // dashboard. Asked at once, then once a minute at most while it lasts, so the page offers the reload (checkBuild)
    // rather than failing on for good; a refresh that fails never asks otherwise. An ask that got no usable answer
    // (the new version answering 503 while it starts) is made again at the next such failure: at most once a try,
    // as the tries back off.
    const answered = !(err instanceof ApiFailure && err.status === 0);
    if (answered && (!answeredFailure || buildUnanswered || Date.now() - buildAskedAt >= BUILD_RECHECK_MS)) checkBuild();
    answeredFailure = answered;
  }

  /**
   * A request hookwatch refuses (refusedRequest) before the page showed anything: said where the page's content
   * would be, in place of a "Loading…" that would never end, with a button removing the filter it names.
   */
  function showRefused(err: ApiFailure, where: HTMLElement): void {
    // A page that shows the refused parameter with its own way to remove it (the alerts page's hook chip) keeps its
    // content, and that control with it.
    if (err.parameter !== undefined && where.querySelector(`[data-param="${CSS.escape(err.parameter)}"]`)) return;
    const state = current();
    const dimension = err.parameter !== undefined && Object.hasOwn(state.filters, err.parameter) ? err.parameter : undefined;
    replace(where, h('section', { class: 'panel empty', id: 'refused' }, h('h1', null, 'Nothing to show'),
      h('p', null, `hookwatch refused what this page asks for: ${err.message}.`),
      dimension === undefined ? h('p', null, 'Change the range or the filters to show the page.')
        : h('p', null, h('button', { type: 'button', class: 'remove-filter', onclick: () => navigate(filtersUrl(current(), removeFilter(state.filters, dimension))) }, `Remove filter ${dimension}`))));
  }

  /**
   * What a failure says: the API's message, or, for an answer the page's code could not read (a TypeError: a field
   * missing or of another type, as from a newer hookwatch), that, with the error.
   */
  function failureMessage(err: unknown): string {
    if (err instanceof ApiFailure) return err.message;
    if (err instanceof TypeError) return `this page could not read hookwatch's answer (${err.message})`;
    return err instanceof Error ? err.message : String(err);
  }

  /** The next refresh: none while paused or while the tab is hidden (it refreshes when shown again). */
  function schedule(state: ViewState, gen: number): void {
    clearTimeout(timer);
    const period = refreshMs(state.params);
    if (period === null || document.hidden) return;
    timer = setTimeout(() => void load(gen), retryDelay(period, failures, retryAfterMs));
  }

  /** When the last tick ran: a much longer gap to the next one is a sleep (WAKE_GAP_MS). */
  let tickedAt = Date.now();

  /**
   * Refreshes now, unless refresh is paused, signed out (every request would be refused the same way) or the last
   * request was refused (refusedRequest: it would be again). Refresh now asks all the same.
   */
  function refreshNow(): void {
    if (refreshMs(readState(location).params) !== null && !signedOut && !failure?.refused) void load(generation);
  }

  function onVisibility(): void {
    if (document.hidden) {
      clearTimeout(timer);
      reloadIfUnused();
      return;
    }
    // A hidden tab's ticks are held back: the gap since the last one is not a sleep, and this refresh covers it.
    tickedAt = Date.now();
    refreshNow();
  }

  /** The network is back: the next try is not left to the backoff, which may be a minute away. */
  function onOnline(): void {
    if (!document.hidden && failures > 0) refreshNow();
  }

  /**
   * Relative times ("3 min ago") keep counting between refreshes, and while the server fails; so does the age of
   * the data on the Updated line, so a screen left open shows it going stale. After a sleep, the page refreshes.
   */
  function tick(): void {
    const now = Date.now();
    const woke = now - tickedAt > WAKE_GAP_MS;
    tickedAt = now;
    reloadIfUnused();
    if (document.hidden) return;
    if (woke) refreshNow();
    for (const c of headerClocks) c();
    for (const el of root.querySelectorAll<HTMLElement>('[data-ago]')) el.textContent = ago(el.dataset['ago'] ?? null, now);
    showUpdated(readState(location));
    drawFailure();
    drawSignedOut();
    sayNews(now);
  }

  async function load(gen: number): Promise<void> {
    if (gen !== generation || !page) return;
    inflight?.ctl.abort();
    const ctl = new AbortController();
    inflight = { ctl, whole: true };
    const focus = followFocus();
    document.body.setAttribute('aria-busy', 'true');
    askDimensions();
    firingNow = askFiring(gen, ctl.signal);
    let again = true;
    try {
      await page.refresh(ctl.signal);
      if (gen !== generation) return;
      const recovered = failures > 0;
      hideBanner();
      failures = 0;
      failure = undefined;
      answeredFailure = false;
      // Data came: a reload to sign in again, if this page is one, did help.
      if (signInReloadAt() !== null) storeSignInReload(null);
      signedOut = false;
      signInAt = undefined;
      lastUpdated = Date.now();
      const firstShown = shownGeneration !== gen;
      shownGeneration = gen;
      showUpdated(readState(location));
      refreshNews(recovered, firstShown);
      if (recovered || lastUpdated - buildAskedAt >= BUILD_CHECK_MS) checkBuild();
      if (firstShown && !scrolledByReader) {
        if (kept) restoreView(kept);
        else fragmentTarget()?.scrollIntoView({ block: 'start' });
      }
      kept = null;
      document.body.dataset['loaded'] = String(Number(document.body.dataset['loaded'] ?? '0') + 1);
    } catch (err) {
      if ((err as Error).name === 'AbortError' || gen !== generation) return;
      // Signed out, or refused (the same request gets the same answer): not asked again by itself.
      again = !(err instanceof ApiFailure && err.signedOut) && !refusedRequest(err);
      showError(err, gen);
    } finally {
      if (inflight?.ctl === ctl) inflight = undefined;
      focus.stop();
      if (gen === generation) {
        focus.keep();
        if (!inflight) document.body.removeAttribute('aria-busy');
        // Given up for a newer refresh, it leaves the next one to that refresh: a timer set now could fire while
        // that one still waits, and give it up in turn. The period is the URL's now: the reader may have paused or
        // changed it while this refresh waited.
        if (again && !ctl.signal.aborted) schedule(readState(location), gen);
      }
    }
  }

  /**
   * Part of the page fetched again after a change made in place: only what that change depends on. A whole
   * refresh under way asked with the page as it was, so it is asked again whole instead. The age of the data
   * stays that of the last whole refresh, and the next refresh stays when it was due; a failure is shown as a
   * refresh's is, and cleared once such a part comes through.
   */
  async function loadPart(gen: number, part: (signal: AbortSignal) => Promise<void>): Promise<void> {
    if (gen !== generation || !page) return;
    if (inflight?.whole) return load(gen);
    inflight?.ctl.abort();
    const ctl = new AbortController();
    inflight = { ctl, whole: false };
    const focus = followFocus();
    document.body.setAttribute('aria-busy', 'true');
    try {
      await part(ctl.signal);
      if (gen !== generation) return;
      if (failure?.part) {
        hideBanner();
        failures = 0;
        failure = undefined;
        answeredFailure = false;
      }
      // The page changed at the user's request, not by a refresh: nothing to tell.
      shownText = pageText();
      document.body.dataset['loaded'] = String(Number(document.body.dataset['loaded'] ?? '0') + 1);
    } catch (err) {
      if ((err as Error).name === 'AbortError' || gen !== generation) return;
      showError(err, gen, true);
      if (!signedOut) schedule(readState(location), gen);
    } finally {
      if (inflight?.ctl === ctl) inflight = undefined;
      focus.stop();
      if (gen === generation) focus.keep();
      if (gen === generation && !inflight) document.body.removeAttribute('aria-busy');
    }
  }

  /**
   * The control with the focus as a refresh goes out, or the one the reader moves it to while the refresh waits for
   * its answer (tabbed to meanwhile), and how to find it again: what keep gives the focus back to once the answer is
   * drawn (keepFocus). Followed until stop.
   */
  function followFocus(): { stop(): void; keep(): void } {
    let focused = document.activeElement;
    let refocus = focusFinder();
    const moved = (): void => {
      focused = document.activeElement;
      refocus = focusFinder();
    };
    document.addEventListener('focusin', moved);
    return { stop: () => document.removeEventListener('focusin', moved), keep: () => keepFocus(focused, refocus) };
  }

  /**
   * How to find the focused control again once it is drawn anew: by its sort key, id or range, else by its place among
   * the controls of the nearest part of the page that keeps its identity (an alert's card, a hook's row, a panel
   * with an id), or that part itself when the control is not drawn again (its list failed to load, say), or the
   * page's content when the part is gone or hidden: a keyboard or screen reader user stays where they were rather
   * than at the start of the document. Null when no control has the focus.
   */
  function focusFinder(): (() => HTMLElement | null) | null {
    const el = document.activeElement;
    if (!(el instanceof HTMLElement) || el === document.body) return null;
    const one = (selector: string) => (): HTMLElement | null => root.querySelector<HTMLElement>(selector);
    if (el.dataset['sort']) return one(`[data-sort="${CSS.escape(el.dataset['sort'])}"]`);
    // The custom range's form closes as the header is drawn anew: the focus goes to what opens it.
    if (el.closest('details.custom')) return one('details.custom > summary');
    if (el.id) return one(`#${CSS.escape(el.id)}`);
    if (el.dataset['range']) return one(`[data-range="${CSS.escape(el.dataset['range'])}"]`);
    const part = partOf(el, '[data-alert-id], [data-hook-id], [id]');
    if (!part) return null;
    const { holder, scope } = part;
    const index = [...holder.querySelectorAll(FOCUSABLE)].indexOf(el);
    return () => {
      const part = root.querySelector<HTMLElement>(scope);
      const control = part?.querySelectorAll<HTMLElement>(FOCUSABLE)[index];
      if (control) return control;
      if (!part || part.hidden) return content ?? null;
      // Focusable from a script only: the part does not join the tab order.
      if (!part.hasAttribute('tabindex')) part.tabIndex = -1;
      return part;
    };
  }

  /**
   * The nearest part of the page around `el`, among `parts`, that keeps its identity when drawn anew (an alert's card,
   * a hook's row, a chart's panel, an element with an id), and a selector that finds it again (of the form
   * keptViewFor reads back).
   */
  function partOf(el: Element, parts: string): { holder: HTMLElement; scope: string } | null {
    const holder = el.parentElement?.closest<HTMLElement>(parts);
    if (!holder) return null;
    const d = holder.dataset;
    const [attr, value] = holder.id ? ['id', holder.id] : d['alertId'] ? ['data-alert-id', d['alertId']] : d['chart'] ? ['data-chart', d['chart']] : ['data-hook-id', d['hookId'] ?? ''];
    return { holder, scope: `[${attr}="${CSS.escape(value)}"]` };
  }

  /** Where the page at `url` is scrolled to and the sections open, as keptViewFor reads them back. */
  function viewText(url = location.href): string {
    const open = [...root.querySelectorAll('details')].filter((d) => d.open).flatMap((d) => {
      const part = partOf(d, '[data-chart], [data-alert-id], [id]');
      return part ? [{ scope: part.scope, index: [...part.holder.querySelectorAll('details')].indexOf(d) }] : [];
    });
    return keptViewText({ url, x: scrollX, y: -(content?.getBoundingClientRect().top ?? -scrollY), open, reloading });
  }

  /**
   * The page goes away (reloaded, by itself to a new version or by the browser, or left): its view is kept for a
   * reload of the same URL, or the way back to it, to come back to (keptViewFor).
   */
  function keepView(): void {
    keepEntryView();
    try {
      sessionStorage.setItem(VIEW_KEY, viewText());
    } catch {
      // Not kept: a reload opens at the top.
    }
  }

  /**
   * The views of the history entries this page left, by entry id, for back and forward to come back to (the
   * browser's own restoration, right away, finds the page not drawn yet). The page scrolls by itself
   * (scrollRestoration "manual"): gone back, it is still where it was as the entry left is kept.
   */
  const entryViews = new Map<string, string>();
  const newEntryId = (): string => `${Date.now().toString(36)}.${Math.random().toString(36).slice(2)}`;
  /** What the page keeps in a history entry's state: its id, and the view kept for the way back (keptViewText). */
  const stateOf = (state: unknown): { id: string | undefined; view: string | null } => {
    const s: { id?: unknown; view?: unknown } = typeof state === 'object' && state !== null ? state : {};
    return { id: typeof s.id === 'string' ? s.id : undefined, view: typeof s.view === 'string' ? s.view : null };
  };
  /** The history entry shown: its id in its state (kept where the page replaces its URL), and its URL. */
  let entryId = newEntryId();
  let entryUrl = location.href;

  /**
   * The view of the entry shown, kept for the way back to it, from this document or (in its state) from another
   * after the page was reloaded or left. Not while the view of the entry come back to waits for its content: the
   * page, not drawn yet, is not scrolled where it was.
   */
  function keepEntryView(store = true): void {
    if (kept) return;
    const view = viewText(entryUrl);
    entryViews.delete(entryId);
    entryViews.set(entryId, view);
    for (const old of entryViews.keys()) if (entryViews.size > MAX_ENTRY_VIEWS) entryViews.delete(old);
    if (store) history.replaceState({ id: entryId, view }, '');
  }

  /**
   * The entry shown is the one of `id` (from its state). An entry an earlier version left holds no id: given one,
   * its view is found again when it is come back to.
   */
  function showEntry(id: string | undefined): void {
    entryId = id ?? newEntryId();
    if (id === undefined) history.replaceState({ id: entryId }, '');
  }

  /** Gone back or forward to another view of this page: drawn, then scrolled back where it was. */
  function onPopState(ev: PopStateEvent): void {
    // The entry left (location names the one come back to) can no longer be written: its view stays with the page.
    keepEntryView(false);
    const { id, view } = stateOf(ev.state);
    showEntry(id);
    render(keptViewFor(entryViews.get(entryId) ?? view, location.href, 'back_forward'));
  }

  /**
   * The view a reload of this URL, or the way back to it, comes back to, once its content is drawn; taken once.
   * Gone back or forward to, the one kept in the history entry.
   */
  function takeKeptView(): KeptView | null {
    try {
      const navigation = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming | undefined;
      const stored = navigation?.type === 'back_forward' ? stateOf(history.state).view : sessionStorage.getItem(VIEW_KEY);
      sessionStorage.removeItem(VIEW_KEY);
      return keptViewFor(stored, location.href, navigation?.type);
    } catch {
      return null;
    }
  }

  /**
   * The part of the page's content the URL's fragment names (`#alert-timeline`), once drawn: the browser looked for
   * it before the page drew its data, so the page scrolls to it itself. Null for none.
   */
  function fragmentTarget(): HTMLElement | null {
    let id: string;
    try {
      id = decodeURIComponent(location.hash.slice(1));
    } catch {
      return null;
    }
    return id && content ? content.querySelector<HTMLElement>(`#${CSS.escape(id)}`) : null;
  }

  /** The content drawn after a reload: the sections open before it are opened again, and the page scrolled back. */
  function restoreView(v: KeptView): void {
    for (const { scope, index } of v.open) {
      const d = document.querySelector(scope)?.querySelectorAll('details')[index];
      if (d) d.open = true;
    }
    window.scrollTo(v.x, scrollY + (content?.getBoundingClientRect().top ?? 0) + v.y);
  }

  /**
   * A refresh drew anew (or moved) the control that had the focus: the focus goes to the control drawn in its place, not
   * back to the start of the document (a keyboard user would tab through the header again, a screen reader would
   * start reading from the top).
   */
  function keepFocus(before: Element | null, find: (() => HTMLElement | null) | null): void {
    if (!find || !before) return;
    if (document.activeElement !== null && document.activeElement !== document.body) return;
    // Put back in the page rather than drawn anew (an alert's card moved into its list again), it lost the focus
    // all the same: it takes it back, with what was typed in it and where.
    if (before.isConnected && before instanceof HTMLElement) before.focus({ preventScroll: true });
    if (document.activeElement !== before) find()?.focus({ preventScroll: true });
  }

  let rendered = false;
  /** The view this page was reloaded from, or gone back to, until its content is drawn. */
  let kept = takeKeptView();
  /**
   * Whether the reader scrolled the page (a wheel, a touch, a scrolling key) since the view to come back to was
   * set: it is not moved back there over their own scrolling, as the browser's own restoration is not.
   */
  let scrolledByReader = false;
  /** Draws the view the URL names; `back`, the view gone back or forward to, is scrolled to once drawn. */
  function render(back: KeptView | null = null): void {
    generation++;
    const gen = generation;
    // After a user's action (not the first drawing), focus goes back to the control used, or to the content of a
    // new page, never to the start of the document: a keyboard user does not tab through the header again.
    const refocus = rendered ? focusFinder() ?? (() => null) : null;
    // A view other than the one reloaded: it opens at its top, or where it was when gone back to.
    if (rendered) kept = back;
    scrolledByReader = false;
    entryUrl = location.href;
    rendered = true;
    clearTimeout(timer);
    inflight?.ctl.abort();
    page?.destroy();
    page = undefined;
    hideBanner();
    failure = undefined;
    shownText = undefined;
    newsDue = undefined;
    const state = readState(location);
    const main = h('main', { id: 'main', tabindex: '-1' });
    content = main;
    headerEl = header(state);
    // The age shown was the last page's: this one has read nothing yet.
    showUpdated(state);
    replace(root, h('a', { href: '#main', class: 'skip' }, 'Skip to content'), headerEl, banner, updateNote, news, main);
    const link = (url: string, attrs: Attrs | null, ...children: Child[]): HTMLAnchorElement => h('a', { ...attrs, href: url, onclick: linkHandler }, ...children);
    const ctx: PageContext = { state, navigate, dimensions, link, replaceUrl, refresh: () => void load(gen), update: (part) => void loadPart(gen, part), sent, firing: () => firingNow };
    const factory = PAGES[state.route.page];
    if (!factory) {
      const nf = notFoundView(location.pathname);
      document.title = nf.title;
      replace(main, h('section', { class: 'panel empty', id: 'not-found' }, h('h1', null, nf.heading),
        h('p', null, nf.text, h('a', { href: '/', onclick: linkHandler }, 'Go to the overview'))));
      return;
    }
    page = factory(main, ctx);
    // Where the navigation left the focus: on the page (the control used went with the page it was on), or on the
    // control used. Moved since (the reader clicked or tabbed to a control while the data loaded), it stays there.
    const left = document.activeElement;
    void load(gen).then(() => {
      if (refocus === null || gen !== generation) return;
      const now = document.activeElement;
      if (now !== null && now !== document.body && now !== left) return;
      // A link to a part of the page (its fragment) brings the focus there, as it scrolled there; not the way back
      // to a view, which comes back to where it was scrolled.
      const target = back ? null : fragmentTarget();
      if (target && !target.matches(FOCUSABLE)) target.tabIndex = -1;
      (target ?? refocus() ?? main).focus({ preventScroll: true });
    });
  }

  /**
   * The theme changed: the page's colours follow by themselves, the charts take theirs when they draw, so the page
   * is refreshed in place. Not drawn anew: a refresh that fails (hookwatch away, the network down) keeps the data
   * shown, and what is half typed in the header stays. Signed out, every request would be refused: the charts keep
   * their colours until the page is reloaded.
   */
  function recolour(): void {
    if (!signedOut) void load(generation);
  }

  // The system switched between light and dark: followed as the theme toggle is, unless a theme is chosen.
  const dark = matchMedia('(prefers-color-scheme: dark)');
  const onScheme = (): void => {
    if (themeChoice() === 'auto') recolour();
  };
  dark.addEventListener('change', onScheme);
  showEntry(stateOf(history.state).id);
  const restoration = history.scrollRestoration;
  history.scrollRestoration = 'manual';
  window.addEventListener('popstate', onPopState);
  document.addEventListener('visibilitychange', onVisibility);
  window.addEventListener('online', onOnline);
  window.addEventListener('pagehide', keepView);
  for (const type of USE_EVENTS) window.addEventListener(type, onUse, { capture: true, passive: true });
  document.addEventListener('input', onInput, true);
  const ticker = setInterval(tick, AGE_TICK_MS);
  render();
  return {
    stop() {
      dark.removeEventListener('change', onScheme);
      window.removeEventListener('popstate', onPopState);
      history.scrollRestoration = restoration;
      document.removeEventListener('visibilitychange', onVisibility);
      window.removeEventListener('online', onOnline);
      window.removeEventListener('pagehide', keepView);
      for (const type of USE_EVENTS) window.removeEventListener(type, onUse, { capture: true });
      document.removeEventListener('input', onInput, true);
      clearInterval(ticker);
      generation++;
      clearTimeout(timer);
      inflight?.ctl.abort();
      page?.destroy();
      page = undefined;
    },
  };
}
