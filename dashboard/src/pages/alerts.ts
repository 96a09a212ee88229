/**
 * Alerts: pending, firing and resolved, each with its notification delivery attempts, and a way to silence the
 * hook an alert is about; the silences in force, each with a way to expire it. Opened from a notification's
 * silence link (silence-link.ts), a silence form prefilled with its alert's labels comes first, focused, each label
 * a matcher the person may uncheck to widen it; it stays through range and state filter changes until the silence
 * is made or the form closed; opened again after another page, it starts afresh. Filtered to a hook (`hook=`, the
 * overview's firing marker leads there), it lists that hook's alerts alone, as the API answers them, the filter
 * shown and removable. When the alerts API is not there (404) the page says so instead of failing.
 */
import { alertPagePath, alertRange } from '../../../shared/src/alert-range.ts';
import type { AlertSummary, Silence, SilenceMatcher } from '../../../shared/src/api.ts';
import { ApiFailure, api, silenceIdOf, silenceWarningsOf } from '../api.ts';
import { clusterPanel } from '../cluster-panel.ts';
import { arrange, breakable, h, replace, scrollBox, table, type Child } from '../dom.ts';
import { isolated } from '../format.ts';
import type { Page, PageContext } from '../page.ts';
import { buildUrl, HOOK_PARAM, keptParams, readState, samePageParams } from '../state.ts';
import {
  DURATIONS, NO_MATCHER, SILENCE_SUMMARY, STATES, alertSubject, alertsView, attemptRows, cardView, clockOffset, hookFilter, hookFilterName, hookFilterUrl, hookMatchers, linkMatchers, linkedAlertText, matcherText,
  silencePrompt, silenceRequest, silenceRows, silencedText, stateFilter, withoutSilenceLink, type SilenceRow,
} from './alerts-state.ts';

/**
 * What was filled in on a silence link's form (its checkboxes, duration, reason and name, in order), kept while
 * the page is drawn anew for a range or state filter change, so the person goes on where they left off; dropped
 * once the silence is made or the form closed, or the page left for another.
 */
let linkDraft: { link: string; values: string[] } | undefined;

/** Builds the alerts page: draws what alerts-state.ts decides; the silence form and the attempts call the API. */
export function alertsPage(root: HTMLElement, ctx: PageContext): Page {
  const { state } = ctx;
  const filter = stateFilter(state.params);
  document.title = 'Alerts · hookwatch';
  const list = h('div', { id: 'alerts-list' }, h('p', { class: 'muted' }, 'Loading…'));
  const notice = h('div', { id: 'alerts-notice', role: 'status', 'aria-live': 'polite' });
  const stateSelect = h('select', { id: 'alert-state', 'aria-label': 'Show alerts in state' },
    h('option', { value: '' }, 'all states'), ...STATES.map((s) => h('option', { value: s, selected: s === filter }, s)));
  stateSelect.addEventListener('change', () => {
    // As the URL is now: a silence link's form closed since the page was drawn stays closed.
    const now = readState(location);
    ctx.navigate(buildUrl('/alerts', now, { ...samePageParams(now), state: stateSelect.value || undefined }), { replace: true });
  });
  // Which replica sends the notifications listed here.
  const cluster = clusterPanel();
  // The silences in force, each with a way to expire it: found again after a reload, wherever it was made.
  const silencesPanel = h('section', { class: 'panel', id: 'silences', 'aria-labelledby': 'silences-heading', hidden: true });
  // A notification's silence link: the silence it asks for, above the list, until the person confirms it.
  const linked = linkMatchers(state.params);
  const linkPanel = h('section', { class: 'panel', id: 'silence-new', 'aria-labelledby': 'silence-new-heading', hidden: linked.length === 0 });
  const linkNote = h('p', { class: 'hint', id: 'silence-new-alert', role: 'status' });
  // The hook filter (the overview's firing marker leads here with it): removed, the page lists every hook's alerts,
  // the focus on the state filter beside it, and Back brings it again.
  const hook = hookFilter(state.params);
  const hookName = h('span', { class: 'hook-filter-name' });
  const removeHook = h('button', { type: 'button', class: 'chip-remove', onclick: () => {
    stateSelect.focus({ preventScroll: true });
    ctx.navigate(hookFilterUrl(readState(location), undefined));
  } }, '×');
  /** The hook filter names the hook as its alerts do, once they are listed. */
  const nameHook = (name: string): void => {
    replace(hookName, breakable(name));
    removeHook.setAttribute('aria-label', `Remove the hook filter ${isolated(name)}`);
  };
  if (hook !== null) nameHook(hook);
  const hookChip = hook === null ? null : h('span', { class: 'chip', id: 'alert-hook-filter', 'data-param': HOOK_PARAM }, 'Hook: ', hookName, removeHook);
  replace(root, h('h1', null, 'Alerts'), h('div', { class: 'toolbar' }, h('label', { for: 'alert-state' }, 'Show '), stateSelect, hookChip), notice, linkPanel, list, silencesPanel, cluster.element);
  /** Open details and half-filled forms survive a refresh: cards are kept by alert id and updated in place. */
  const cards = new Map<string, { card: HTMLElement; update(a: AlertSummary): void }>();
  /** The section of each state's alerts, kept as the cards in it are. */
  const groupSections = new Map<string, { section: HTMLElement; heading: HTMLElement }>();
  // The server's clock as the alerts API last said it, run on by the browser's since: what silences end after and
  // cards' links end at.
  let offsetMs = 0;
  const serverNow = (): number => Date.now() + offsetMs;

  // The last ask of each holder: an answer to an earlier one, come after it, is dropped.
  const asked = new WeakMap<HTMLElement, number>();
  let asks = 0;
  // Given up when the page is left (for another page, or this one drawn anew): an ask of a card's attempts, made as
  // they are opened or while they are open, is no part of the refresh the shell gives up then, and would run on
  // with nobody to read its answer.
  const left = new AbortController();
  const attemptsFor = async (a: AlertSummary, holder: HTMLElement): Promise<void> => {
    const ask = ++asks;
    asked.set(holder, ask);
    // Asked again at each refresh while open: what is shown stays until the answer, so a wall screen neither
    // flickers nor jumps; "Loading" is said when there is nothing to show yet.
    if (!holder.firstChild) replace(holder, h('p', { class: 'muted' }, 'Loading delivery attempts…'));
    let shown: HTMLElement;
    try {
      const rows = attemptRows(await api.alert(a.id, left.signal));
      shown = rows === null
        ? h('p', { class: 'muted' }, 'No notification has been attempted yet.')
        : table('Notification delivery attempts', ['Receiver', 'Notification', 'Attempt', 'At', 'Outcome', 'HTTP status', 'Error', 'Duration'], rows, { class: 'data attempts' });
    } catch (err) {
      if ((err as Error).name === 'AbortError') return;
      shown = h('p', { class: 'warn' }, `Could not load delivery attempts: ${(err as Error).message}`);
    }
    if (asked.get(holder) !== ask) return;
    // Drawn again only when it changed: a table being read or scrolled stays as it is.
    const now = holder.firstElementChild;
    const box = holder.childElementCount === 1 && now?.classList.contains('table-scroll') ? now : null;
    if (holder.childElementCount === 1 && (box?.firstElementChild ?? now)?.outerHTML === shown.outerHTML) return;
    // A table changed is drawn in the box it scrolls in (eight columns are wider than a phone), kept: the focus a
    // keyboard reader gave it and how far it is scrolled stay.
    if (box !== null && shown instanceof HTMLTableElement) replace(box, shown);
    else replace(holder, shown instanceof HTMLTableElement ? scrollBox('Notification delivery attempts', shown) : shown);
  };

  /** `made`: called once the silence exists; `extra`: controls after the Silence button. */
  const silenceForm = (matchers: () => SilenceMatcher[], prompt: string, made?: () => void, extra?: Child): HTMLFormElement => {
    const duration = h('select', { 'aria-label': 'Silence for' }, ...DURATIONS.map(([label, ms]) => h('option', { value: String(ms) }, label)));
    const comment = h('input', { type: 'text', 'aria-label': 'Reason', placeholder: 'reason (required)', maxlength: 500, required: true });
    const by = h('input', { type: 'text', 'aria-label': 'Your name', placeholder: 'your name', maxlength: 200, required: true });
    const result = h('span', { class: 'silence-result', role: 'status' });
    const submit = h('button', { type: 'submit' }, 'Silence');
    return h('form', {
      class: 'silence-form',
      onsubmit: async (ev: Event) => {
        ev.preventDefault();
        const form = ev.currentTarget as HTMLFormElement;
        const now = serverNow();
        const chosen = matchers();
        if (chosen.length === 0) {
          replace(result, NO_MATCHER);
          return;
        }
        try {
          const created = await api.createSilence(silenceRequest(chosen, Number(duration.value), by.value, comment.value, now));
          const id = silenceIdOf(created);
          ctx.sent(form);
          made?.();
          // The card and the silences in force show it at once, not at the next refresh (never while paused).
          ctx.refresh();
          replace(result, silencedText(now + Number(duration.value), id),
            id ? h('button', { type: 'button', onclick: async () => {
              try {
                await api.expireSilence(id);
                replace(result, 'Silence expired.');
                // The button pressed went with the silence: the focus stays in the form, on what silences again.
                submit.focus();
                ctx.refresh();
              } catch (err) {
                replace(result, `Could not expire the silence: ${(err as Error).message}`);
              }
            } }, 'Expire it') : null,
          // A matcher on a label no alert carries: made all the same (a rule may come to carry it), and said.
          ...silenceWarningsOf(created).map((w) => h('span', { class: 'warn silence-warning' }, w)));
        } catch (err) {
          replace(result, `Could not silence: ${(err as Error).message}`);
        }
      },
    },
    h('span', null, prompt),
    duration, comment, by, submit, extra, result);
  };

  if (linked.length) {
    const link = JSON.stringify(linked);
    // Each label a matcher, checked: unchecking one widens the silence (hook_event and hook_name alone: every rule of the hook).
    const boxes = linked.map(() => h('input', { type: 'checkbox', checked: true }));
    const chosen = (): SilenceMatcher[] => linked.filter((_, i) => boxes[i]?.checked);
    const noneNote = h('p', { class: 'hint', role: 'status' });
    const close = h('button', { type: 'button', onclick: () => {
      dismiss();
      linkPanel.hidden = true;
      root.focus({ preventScroll: true });
    } }, 'Cancel');
    /** The silence made or the form closed: the URL no longer opens it, so a reload or a range change does not. */
    const dismiss = (): void => {
      linkDraft = undefined;
      ctx.replaceUrl(withoutSilenceLink(location));
      close.textContent = 'Close';
    };
    const form = silenceForm(chosen, 'Silence them for ', dismiss, close);
    replace(linkPanel, h('h2', { id: 'silence-new-heading' }, 'Silence an alert'),
      h('p', null, 'The notification links the alerts with these labels; the silence mutes every alert with the checked ones:'),
      h('ul', { class: 'silence-matchers' }, ...linked.map((m, i) => h('li', null, h('label', null, boxes[i], matcherText(m))))), noneNote, linkNote, form);
    const controls = [...linkPanel.querySelectorAll<HTMLInputElement | HTMLSelectElement>('input, select')];
    const restored = linkDraft?.link === link ? linkDraft.values : undefined;
    controls.forEach((c, i) => {
      const v = restored?.[i];
      if (v === undefined) return;
      if (c instanceof HTMLInputElement && c.type === 'checkbox') c.checked = v === 'true';
      else c.value = v;
    });
    const said = (): void => {
      noneNote.textContent = chosen().length ? '' : NO_MATCHER;
    };
    said();
    linkPanel.addEventListener('input', () => {
      said();
      linkDraft = { link, values: controls.map((c) => (c instanceof HTMLInputElement && c.type === 'checkbox' ? String(c.checked) : c.value)) };
    });
    // The reason is what is left to type: the matchers are given, the duration has its default.
    if (!restored) form.querySelector<HTMLInputElement>('input[aria-label="Reason"]')?.focus();
  }

  const expireButton = (row: SilenceRow): HTMLElement => {
    const result = h('span', { class: 'silence-result', role: 'status' });
    const button = h('button', { type: 'button', 'aria-label': `Expire silence ${row.id}`, onclick: async () => {
      // Held by aria-disabled, not disabled: a disabled button drops the focus, and the refresh then cannot put it
      // back where the row was.
      if (button.getAttribute('aria-disabled') === 'true') return;
      button.setAttribute('aria-disabled', 'true');
      try {
        await api.expireSilence(row.id);
        replace(result, 'Expired.');
        ctx.refresh();
      } catch (err) {
        button.removeAttribute('aria-disabled');
        replace(result, `Could not expire the silence: ${(err as Error).message}`);
      }
    } }, 'Expire');
    return h('span', null, button, ' ', result);
  };
  const drawSilences = (rows: SilenceRow[]): void => {
    silencesPanel.hidden = rows.length === 0;
    replace(silencesPanel, h('h2', { id: 'silences-heading' }, `Silences (${rows.length})`),
      scrollBox('Silences in force', table('Silences in force', ['Matchers', 'State', 'When', 'By', 'Comment', 'Id', h('span', { class: 'sr-only' }, 'Expire')],
        rows.map((r) => [breakable(r.matchers), r.state, r.when, r.createdBy, r.comment, breakable(r.id), expireButton(r)]), { class: 'data silences' })));
  };

  const drawSilencesFailure = (err: Error): void => {
    // No silences API there (404): nothing to list. Any other failure is said, the alerts still shown.
    const missing = err instanceof ApiFailure && (err.status === 404 || err.status === 501);
    silencesPanel.hidden = missing;
    replace(silencesPanel, missing ? null : h('h2', { id: 'silences-heading' }, 'Silences'), missing ? null : h('p', { class: 'warn' }, `Could not load the silences: ${err.message}`));
  };

  let receivers: string[] | undefined;
  let all: AlertSummary[] = [];
  let silences: Silence[] = [];
  // An alert's hook (a quiet feed's alert: the overview) over the time the alert counted, as its notifications link
  // to it: the page then shows the outputs the alert names, or when the feed stopped, whatever range this page is on.
  const alertPageUrl = (a: AlertSummary): string | null => {
    const path = alertPagePath(a);
    return path === null ? null : buildUrl(path, { range: { kind: 'custom', ...alertRange(a, serverNow()) }, filters: state.filters }, keptParams(state.params));
  };
  const makeCard = (a: AlertSummary): { card: HTMLElement; update(a: AlertSummary): void } => {
    const head = h('div', { class: 'alert-head' });
    const labels = h('dl', { class: 'labels' });
    const times = h('p', { class: 'muted small' });
    const attempts = h('div', { class: 'attempts-holder' });
    const details = h('details', { class: 'attempts-details' }, h('summary', null, 'Delivery attempts'), attempts);
    details.addEventListener('toggle', () => {
      if (details.open) void attemptsFor(current, attempts);
    });
    let current = a;
    const silence = h('details', { class: 'silence' }, h('summary', null, SILENCE_SUMMARY[alertSubject(a).kind]), silenceForm(() => hookMatchers(a), silencePrompt(a)));
    const card = h('article', { class: 'panel alert', 'data-alert-id': a.id }, head, labels, times, details, silence);
    const update = (n: AlertSummary): void => {
      current = n;
      const v = cardView(n, all, receivers, silences);
      const superseded = v.state === 'superseded';
      const expired = v.state === 'data-expired';
      // Ended because hookwatch no longer keeps the hook: its page would say "No such hook", and the range the alert
      // counted (the hook being quiet) held no execution anyway.
      const url = expired ? null : alertPageUrl(n);
      // A silence of a hook hookwatch no longer keeps is of no use: the card offers none.
      silence.hidden = expired;
      card.dataset['state'] = v.state;
      replace(head, superseded
        ? h('span', { class: 'status state-superseded', title: 'the hook is now over the cap: the persisted alert took over' }, 'superseded')
        : expired ? h('span', { class: 'status state-data-expired', title: 'the hook\'s data left retention: hookwatch no longer keeps the hook, which was not heard again' }, 'ended')
          : h('span', { class: `status state-${n.state}` }, n.state), ' ', h('strong', null, n.rule), ' · ',
        url === null ? h('span', { class: 'alert-subject', title: expired ? 'hookwatch no longer keeps this hook: its data left retention' : undefined }, breakable(v.subject.text))
          : ctx.link(url, n.hookId ? { class: 'hook-link' } : null, breakable(v.subject.text)),
        superseded ? h('span', { class: 'chip superseded-note' }, 'superseded by persisted: now over the cap') : null,
        expired ? h('span', { class: 'chip data-expired-note' }, 'ended: hook data expired, not heard again') : null,
        v.silencedBy ? h('span', { class: 'chip' }, v.silencedBy) : null);
      replace(labels, ...v.labels.flatMap((l) => [h('dt', null, l.name), h('dd', l.raw === null ? null : { title: l.raw }, l.text)]));
      replace(times, ...v.times);
      if (details.open) void attemptsFor(n, attempts);
    };
    update(a);
    return { card, update };
  };

  return {
    async refresh(signal) {
      await cluster.refresh(signal);
      let view;
      try {
        // The silences are an addition to the page: a server without them (or failing on them) still lists its alerts.
        const [r, listed] = await Promise.all([api.alerts(hook === null ? {} : { hook }, signal), api.silences(signal).catch((err: unknown) => err as Error)]);
        offsetMs = clockOffset(r, Date.now());
        if (listed instanceof Error) {
          if (listed.name === 'AbortError') throw listed;
          drawSilencesFailure(listed);
          silences = [];
        } else {
          silences = listed.silences;
          drawSilences(silenceRows(silences));
        }
        all = r.alerts;
        receivers = r.receivers;
        // A live region: set again only when what it says changes.
        const said = linked.length ? linkedAlertText(linked, all, silences) : '';
        if (said !== linkNote.textContent) linkNote.textContent = said;
        const name = hook === null ? null : hookFilterName(hook, all);
        if (name !== null && name !== hookName.textContent) nameHook(name);
        view = alertsView(r, state, Date.now(), name);
      } catch (err) {
        if (err instanceof ApiFailure && (err.status === 404 || err.status === 501)) {
          replace(list, h('section', { class: 'panel empty', id: 'empty-state' }, h('h2', null, 'Alerting is not available'),
            h('p', null, 'This hookwatch has no alerts API (it answered 404). Alert rules, notifications and silences appear here once alerting is enabled.')));
          cards.clear();
          return;
        }
        // A hook filter hookwatch refuses (no hook id): said where the alerts would be, the chip above removes it.
        if (err instanceof ApiFailure && err.status === 400 && err.parameter === HOOK_PARAM && hookChip !== null) {
          replace(list, h('section', { class: 'panel empty', id: 'hook-filter-refused' }, h('h2', null, 'No alerts to show for this hook filter'),
            h('p', null, `hookwatch refused it: ${err.message}. Remove the hook filter above to list every hook's alerts.`)));
          cards.clear();
        }
        throw err;
      }
      const notes = [
        view.noReceivers ? h('p', { class: 'warn', id: 'no-receivers' }, 'No receiver is configured: alerts show here, nobody is notified (see docs/alerting.md).') : null,
        view.rangeNote ? h('p', { class: 'hint', id: 'alerts-range-note' }, view.rangeNote) : null,
      ];
      // A live region: drawn again only when what it says changes, or a screen reader reads it out at every refresh.
      if (notes.map((n) => n?.textContent ?? '').join('') !== notice.textContent) replace(notice, ...notes);
      if (view.empty !== null) {
        replace(list, h('section', { class: 'panel empty', id: 'empty-state' }, h('h2', null, 'No alerts'), h('p', null, view.empty)));
        cards.clear();
        return;
      }
      const seen = new Set<string>();
      // Sections and cards are kept and moved only when their place changes: a card moved leaves the page for a
      // moment, which scrolled its open delivery attempts back to their first column at every refresh.
      const sections = view.groups.map((g) => {
        let s = groupSections.get(g.state);
        if (!s) {
          const heading = h('h2', { id: `alerts-${g.state}` });
          s = { section: h('section', { class: 'alert-group', 'data-state': g.state, 'aria-labelledby': `alerts-${g.state}` }), heading };
          groupSections.set(g.state, s);
        }
        if (s.heading.textContent !== g.heading) s.heading.textContent = g.heading;
        const more = g.more === null ? null : s.section.querySelector<HTMLElement>(`#alerts-${g.state}-more`) ?? h('p', { class: 'hint', id: `alerts-${g.state}-more` });
        if (more !== null && more.textContent !== g.more) more.textContent = g.more;
        arrange(s.section, s.heading, ...g.alerts.map((a) => {
          seen.add(a.id);
          let c = cards.get(a.id);
          if (c) c.update(a);
          else {
            c = makeCard(a);
            cards.set(a.id, c);
          }
          return c.card;
        }), ...(more === null ? [] : [more]));
        return s.section;
      });
      for (const id of [...cards.keys()]) if (!seen.has(id)) cards.delete(id);
      arrange(list, ...sections);
    },
    destroy() {
      left.abort();
      cards.clear();
      // Left for another page (the header's links, Back): opening the link again later is a new visit, with a
      // fresh form. Drawn anew for the same link (a range or state change), the draft stays.
      const next = readState(location);
      if (next.route.page !== 'alerts' || JSON.stringify(linkMatchers(next.params)) !== linkDraft?.link) linkDraft = undefined;
    },
  };
}
