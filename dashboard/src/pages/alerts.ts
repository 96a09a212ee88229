/**
 * Alerts: pending, firing and resolved, each with its notification delivery attempts, and a way to silence the
 * hook an alert is about. When the alerts API is not there (404) the page says so instead of failing.
 */
import type { AlertState, AlertSummary } from '../../../shared/src/api.ts';
import { ApiFailure, api, silenceIdOf } from '../api.ts';
import { clusterPanel } from '../cluster-panel.ts';
import { h, replace, table } from '../dom.ts';
import { dateTime, num, plural } from '../format.ts';
import type { Page, PageContext } from '../page.ts';
import { buildUrl, keptParams, rangeLabel, type Range } from '../state.ts';

const STATES: AlertState[] = ['firing', 'pending', 'resolved'];
/** Labels that name a hook; a silence matches on these so it mutes that hook and nothing else. */
const HOOK_LABELS = ['hook_id', 'hook_event', 'hook_name', 'hook'];
const DURATIONS: [string, number][] = [['1 hour', 3_600_000], ['4 hours', 4 * 3_600_000], ['1 day', 86_400_000], ['7 days', 7 * 86_400_000]];

/** Matchers for silencing the hook an alert is about (its hook labels; all labels when it names none). */
export function hookMatchers(a: AlertSummary): { name: string; value: string; isRegex: boolean; isEqual: boolean }[] {
  const keys = Object.keys(a.labels).filter((k) => HOOK_LABELS.includes(k));
  const use = keys.length ? keys : Object.keys(a.labels).filter((k) => k !== 'alertname' && k !== 'rule');
  return use.map((k) => ({ name: k, value: a.labels[k] ?? '', isRegex: false, isEqual: true }));
}

/** What an alert is about, in words: a hook, a set of clients, the whole feed. */
export function alertSubject(a: AlertSummary): { text: string; kind: 'hook' | 'clients' | 'feed' | 'alert' } {
  const hook = a.labels['hook_name'] ?? a.labels['hook'];
  if (hook !== undefined || a.hookId) return { text: hook ?? a.hookId ?? '', kind: 'hook' };
  if (a.labels['service_version'] !== undefined) {
    return { text: `${a.labels['service_name'] ?? 'client'} ${a.labels['service_version'] || '(unknown version)'} clients`, kind: 'clients' };
  }
  if (a.labels['scope'] === 'feed') return { text: 'all hooks (the whole feed)', kind: 'feed' };
  return { text: a.labels['alertname'] ?? a.rule, kind: 'alert' };
}

/** Rules a `persisted` alert makes moot for the same hook: once over the cap, "near" and "growing" are old news. */
const SUPERSEDED_BY_PERSISTED = ['headroom', 'growth'];

/**
 * A resolved headroom or growth alert whose hook now has an active `persisted` alert did not get better: it
 * was superseded. Shown as such, never as a green "resolved".
 */
export function supersededBy(a: AlertSummary, all: readonly AlertSummary[]): AlertSummary | undefined {
  if (a.state !== 'resolved' || !SUPERSEDED_BY_PERSISTED.includes(a.rule) || !a.hookId) return undefined;
  return all.find((x) => x.rule === 'persisted' && x.hookId === a.hookId && x.state !== 'resolved');
}

/** Whether an alert was active at some time in [fromMs, toMs]. */
export function activeDuring(a: AlertSummary, fromMs: number, toMs: number): boolean {
  const start = Date.parse(a.activeAt);
  const end = a.endsAt ? Date.parse(a.endsAt) : Infinity;
  return start <= toMs && end >= fromMs;
}

function rangeBounds(range: Range, nowMs: number): [number, number] {
  if (range.kind === 'custom') return [Date.parse(range.from), Date.parse(range.to)];
  const span = { '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000, '30d': 30 * 86_400_000 }[range.preset];
  return [nowMs - span, nowMs];
}

/** Builds the alerts page. */
export function alertsPage(root: HTMLElement, ctx: PageContext): Page {
  const { state } = ctx;
  const filter = state.params.get('state');
  document.title = 'Alerts · hookwatch';
  const list = h('div', { id: 'alerts-list' }, h('p', { class: 'muted' }, 'Loading…'));
  const notice = h('div', { id: 'alerts-notice', role: 'status', 'aria-live': 'polite' });
  const stateSelect = h('select', { id: 'alert-state', 'aria-label': 'Show alerts in state' },
    h('option', { value: '' }, 'all states'), ...STATES.map((s) => h('option', { value: s, selected: s === filter }, s)));
  stateSelect.addEventListener('change', () => ctx.navigate(buildUrl('/alerts', state, { ...keptParams(state.params), state: stateSelect.value || undefined }), { replace: true }));
  // Which replica sends the notifications listed here.
  const cluster = clusterPanel();
  replace(root, h('h1', null, 'Alerts'), h('div', { class: 'toolbar' }, h('label', { for: 'alert-state' }, 'Show '), stateSelect), notice, list, cluster.element);
  /** Open details and half-filled forms survive a refresh: cards are kept by alert id and updated in place. */
  const cards = new Map<string, { card: HTMLElement; update(a: AlertSummary): void }>();

  const attemptsFor = async (a: AlertSummary, holder: HTMLElement): Promise<void> => {
    replace(holder, h('p', { class: 'muted' }, 'Loading delivery attempts…'));
    try {
      const detail = await api.alert(a.id);
      replace(holder, detail.attempts.length === 0
        ? h('p', { class: 'muted' }, 'No notification has been attempted yet.')
        : table('Notification delivery attempts', ['Receiver', 'Notification', 'Attempt', 'At', 'Outcome', 'HTTP status', 'Error', 'Duration'],
          detail.attempts.map((t) => [t.receiver, t.status, num(t.attempt), dateTime(t.at), t.outcome, t.httpStatus === null ? '–' : String(t.httpStatus), t.error ?? '', `${num(t.durationMs)} ms`]),
          { class: 'data attempts' }));
    } catch (err) {
      replace(holder, h('p', { class: 'warn' }, `Could not load delivery attempts: ${(err as Error).message}`));
    }
  };

  const silenceForm = (a: AlertSummary): HTMLElement => {
    const duration = h('select', { 'aria-label': 'Silence for' }, ...DURATIONS.map(([label, ms]) => h('option', { value: String(ms) }, label)));
    const comment = h('input', { type: 'text', 'aria-label': 'Reason', placeholder: 'reason (required)', maxlength: 500, required: true });
    const by = h('input', { type: 'text', 'aria-label': 'Your name', placeholder: 'your name', maxlength: 200, required: true });
    const result = h('span', { class: 'silence-result', role: 'status' });
    const matchers = hookMatchers(a);
    return h('form', {
      class: 'silence-form',
      onsubmit: async (ev: Event) => {
        ev.preventDefault();
        const now = Date.now();
        try {
          // No startsAt: the server starts it on its own clock, so a browser clock that runs behind cannot
          // create a silence that only begins later.
          const created = await api.createSilence({
            matchers, endsAt: new Date(now + Number(duration.value)).toISOString(),
            createdBy: by.value, comment: comment.value,
          });
          const id = silenceIdOf(created);
          replace(result, `Silenced until ${dateTime(now + Number(duration.value))}${id ? ` (silence ${id})` : ''}. `,
            id ? h('button', { type: 'button', onclick: async () => {
              try {
                await api.expireSilence(id);
                replace(result, 'Silence expired.');
              } catch (err) {
                replace(result, `Could not expire the silence: ${(err as Error).message}`);
              }
            } }, 'Expire it') : null);
        } catch (err) {
          replace(result, `Could not silence: ${(err as Error).message}`);
        }
      },
    },
    h('span', null, `Silence ${alertSubject(a).text} (matching ${matchers.map((m) => `${m.name}=${m.value}`).join(', ') || 'nothing'}) for `),
    duration, comment, by, h('button', { type: 'submit' }, 'Silence'), result);
  };

  let receivers: string[] | undefined;
  let all: AlertSummary[] = [];
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
    const card = h('article', { class: 'panel alert', 'data-alert-id': a.id },
      head, labels, times, details,
      h('details', { class: 'silence' }, h('summary', null, { hook: 'Silence this hook', clients: 'Silence these clients', feed: 'Silence this alert', alert: 'Silence this alert' }[alertSubject(a).kind]), silenceForm(a)));
    const update = (n: AlertSummary): void => {
      current = n;
      const by = supersededBy(n, all);
      card.dataset['state'] = by ? 'superseded' : n.state;
      const subject = alertSubject(n);
      replace(head, by
        ? h('span', { class: 'status state-superseded', title: 'the hook is now over the cap: the persisted alert took over' }, 'superseded')
        : h('span', { class: `status state-${n.state}` }, n.state), ' ', h('strong', null, n.rule), ' · ',
        n.hookId ? ctx.link(buildUrl(`/hooks/${n.hookId}`, state), { class: 'hook-link' }, subject.text) : h('span', { class: 'alert-subject' }, subject.text),
        by ? h('span', { class: 'chip superseded-note' }, 'superseded by persisted: now over the cap') : null,
        n.silencedBy.length ? h('span', { class: 'chip' }, `silenced by ${n.silencedBy.join(', ')}`) : null);
      replace(labels, ...Object.entries(n.labels).flatMap(([k, v]) => [h('dt', null, k), h('dd', null, v)]),
        ...Object.entries(n.annotations).flatMap(([k, v]) => [h('dt', null, k), h('dd', null, v)]));
      replace(times, `active since ${dateTime(n.activeAt)}`, n.startsAt ? ` · firing since ${dateTime(n.startsAt)}` : '',
        n.endsAt ? ` · ${by ? 'superseded' : 'resolved'} ${dateTime(n.endsAt)}` : '',
        n.lastNotifiedAt ? ` · last notified ${dateTime(n.lastNotifiedAt)}`
          : receivers && receivers.length === 0 ? ' · no receiver is configured: shown here only, nobody is notified' : ' · not notified yet');
      if (details.open) void attemptsFor(n, attempts);
    };
    update(a);
    return { card, update };
  };

  return {
    async refresh(signal) {
      await cluster.refresh(signal);
      let alerts: AlertSummary[];
      let nowMs = Date.now();
      try {
        const r = await api.alerts({}, signal);
        all = r.alerts;
        receivers = r.receivers;
        if (r.now) nowMs = Date.parse(r.now);
        const [fromMs, toMs] = rangeBounds(state.range, nowMs);
        alerts = r.alerts.filter((a) => activeDuring(a, fromMs, toMs));
      } catch (err) {
        if (err instanceof ApiFailure && (err.status === 404 || err.status === 501)) {
          replace(list, h('section', { class: 'panel empty', id: 'empty-state' }, h('h2', null, 'Alerting is not available'),
            h('p', null, 'This hookwatch has no alerts API (it answered 404). Alert rules, notifications and silences appear here once alerting is enabled.')));
          cards.clear();
          return;
        }
        throw err;
      }
      const shown = filter ? alerts.filter((a) => a.state === filter) : alerts;
      const hidden = all.length - alerts.length;
      replace(notice, receivers && receivers.length === 0
        ? h('p', { class: 'warn', id: 'no-receivers' }, 'No receiver is configured: alerts show here, nobody is notified (see docs/alerting.md).') : null,
      hidden > 0 ? h('p', { class: 'hint', id: 'alerts-range-note' }, `Alerts active in the ${rangeLabel(state.range)}; ${plural(hidden, 'older alert')} outside the range ${hidden === 1 ? 'is' : 'are'} not shown.`) : null);
      if (shown.length === 0) {
        replace(list, h('section', { class: 'panel empty', id: 'empty-state' }, h('h2', null, 'No alerts'),
          h('p', null, filter ? `No ${filter} alerts in the ${rangeLabel(state.range)}.` : `Nothing was pending, firing or resolved in the ${rangeLabel(state.range)}. Alerts appear here when a hook’s output is persisted, nears the cap or is forecast to cross it.`)));
        cards.clear();
        return;
      }
      const groups = STATES.map((s) => ({ s, items: shown.filter((a) => a.state === s) })).filter((g) => g.items.length);
      const seen = new Set<string>();
      const sections = groups.map((g) => h('section', { class: 'alert-group', 'data-state': g.s, 'aria-labelledby': `alerts-${g.s}` },
        h('h2', { id: `alerts-${g.s}` }, `${g.s[0]?.toUpperCase()}${g.s.slice(1)} (${num(g.items.length)})`),
        ...g.items.map((a) => {
          seen.add(a.id);
          let c = cards.get(a.id);
          if (c) c.update(a);
          else {
            c = makeCard(a);
            cards.set(a.id, c);
          }
          return c.card;
        })));
      for (const id of [...cards.keys()]) if (!seen.has(id)) cards.delete(id);
      replace(list, ...sections);
    },
    destroy() {
      cards.clear();
    },
  };
}
