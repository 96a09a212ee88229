/**
 * The alerts page's state, without the DOM: which alerts the range and the state filter show and how they are
 * grouped, what each card says (superseded, silenced, notified or not), the notice above the list, the silence a
 * form asks the API for and what its result reads. Unit-tested in Node against API-shaped responses.
 */
import { hookDataExpired } from '../../../shared/src/alert-range.ts';
import { readableError } from '../../../shared/src/network-error.ts';
import type { AlertDetailResponse, AlertState, AlertSummary, AlertsResponse, Silence, SilenceMatcher } from '../../../shared/src/api.ts';
import { SILENCE_PARAM, silenceLabels } from '../../../shared/src/silence-link.ts';
import { chars, dateTime, dateTimeSeconds, headroomText, isolated, num, pct, plural } from '../format.ts';
import { HOOK_PARAM, buildUrl, rangeLabel, samePageParams, type Range, type ViewState } from '../state.ts';

export const STATES: AlertState[] = ['firing', 'pending', 'resolved'];
/**
 * Severities, the most severe first, as Alertmanager and Grafana list them (`error` beside `critical`, as the OTLP
 * alert events map it), in any case; any other (or none) comes after.
 */
const SEVERITY_RANKS = new Map([['critical', 0], ['error', 0], ['warning', 1], ['info', 2]]);

const severityRank = (a: AlertSummary): number => SEVERITY_RANKS.get((a.labels['severity'] ?? '').toLowerCase()) ?? 3;

/**
 * Firing or pending alerts the most severe first (critical, error, warning, info, then any other), the newest first
 * within a severity; resolved ones as the API lists them.
 */
function ordered(state: AlertState, alerts: AlertSummary[]): AlertSummary[] {
  if (state === 'resolved') return alerts;
  const since = (a: AlertSummary): number => Date.parse(a.startsAt ?? a.activeAt);
  return [...alerts].sort((a, b) => severityRank(a) - severityRank(b) || since(b) - since(a));
}
/**
 * Labels that name a hook, as hookwatch sets them on a hook's alerts; a silence matches on these so it mutes that
 * hook and nothing else. A rule's own label of another name (even `hook`) names no hook.
 */
const HOOK_LABELS = ['hook_event', 'hook_name'];
export const DURATIONS: [string, number][] = [['1 hour', 3_600_000], ['4 hours', 4 * 3_600_000], ['1 day', 86_400_000], ['7 days', 7 * 86_400_000]];

/**
 * Matchers for silencing the hook an alert is about: its hook labels; when it names no hook, every label but
 * `alertname` (and a rule's own `rule` label), so the silence covers every rule about the same subject.
 */
export function hookMatchers(a: AlertSummary): SilenceMatcher[] {
  const keys = Object.keys(a.labels).filter((k) => HOOK_LABELS.includes(k));
  const use = keys.length ? keys : Object.keys(a.labels).filter((k) => k !== 'alertname' && k !== 'rule');
  return use.map((k) => ({ name: k, value: a.labels[k] ?? '', isRegex: false, isEqual: true }));
}

/** What an alert is about, in words: a hook, a set of clients, the whole feed. */
export function alertSubject(a: AlertSummary): { text: string; kind: 'hook' | 'clients' | 'feed' | 'alert' } {
  const hook = a.labels['hook_name'];
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
 * was superseded. Shown as such, never as a green "resolved". The server says so in the `superseded_by`
 * annotation, naming the persisted rule, whatever the rules are named (a headroom rule named `near_cap`);
 * without it, the rules named after their kind are matched.
 */
export function supersededBy(a: AlertSummary, all: readonly AlertSummary[]): AlertSummary | undefined {
  if (a.state !== 'resolved' || !a.hookId) return undefined;
  const by = a.annotations['superseded_by'];
  if (by !== undefined) return all.find((x) => x.rule === by && x.hookId === a.hookId && x.state !== 'resolved');
  if (!SUPERSEDED_BY_PERSISTED.includes(a.rule)) return undefined;
  return all.find((x) => x.rule === 'persisted' && x.hookId === a.hookId && x.state !== 'resolved');
}

/**
 * A resolved quiet-hook (silence) alert that ended because retention removed its hook's data (the server's
 * `data_expired` annotation): the hook was never heard again. Shown as ended, never as a green "resolved", as Slack
 * heads it `[ENDED: hook data expired]`.
 */
export function dataExpired(a: AlertSummary): boolean {
  return a.state === 'resolved' && hookDataExpired(a);
}

/** Whether an alert was active at some time in [fromMs, toMs]. */
export function activeDuring(a: AlertSummary, fromMs: number, toMs: number): boolean {
  const start = Date.parse(a.activeAt);
  const end = a.endsAt ? Date.parse(a.endsAt) : Infinity;
  return start <= toMs && end >= fromMs;
}

/** The range's bounds on the server's clock. */
export function rangeBounds(range: Range, nowMs: number): [number, number] {
  if (range.kind === 'custom') return [Date.parse(range.from), Date.parse(range.to)];
  const span = { '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000, '30d': 30 * 86_400_000 }[range.preset];
  return [nowMs - span, nowMs];
}

/** The state filter of the URL (`state=`), or null for all states: with none, or one that is not a state (stateNote). */
export function stateFilter(params: URLSearchParams): AlertState | null {
  const given = params.get('state');
  return STATES.find((s) => s === given) ?? null;
}

/**
 * What the header says of a `state=` of the URL that is not a state (`state=Firing`), as of a range it does not
 * take, and that the page shows all states instead; null when the URL has none such. The value is isolated.
 */
export function stateNote(params: URLSearchParams): string | null {
  const given = params.get('state');
  if (given === null || given === '' || stateFilter(params) !== null) return null;
  return `state=${isolated(given)} in the link is not a state (${STATES.join(', ')}): it shows all states.`;
}

/** The hook filter of the URL (`hook=`, a hook id), or null for every hook's alerts. */
export function hookFilter(params: URLSearchParams): string | null {
  return params.get(HOOK_PARAM);
}

/** The hook filtered on, as its alerts name it (`hook_name`); its id while none of them is listed. */
export function hookFilterName(hookId: string, alerts: readonly AlertSummary[]): string {
  return alerts.find((a) => a.hookId === hookId && a.labels['hook_name'] !== undefined)?.labels['hook_name'] ?? hookId;
}

/** The alerts page as it is, filtered to the hook `hookId`, or to none (undefined). */
export function hookFilterUrl(state: ViewState, hookId: string | undefined): string {
  return buildUrl('/alerts', state, { ...samePageParams(state), [HOOK_PARAM]: hookId });
}

/** What the list shows for one answer of the API. */
export interface AlertsView {
  /** Receivers are configured but none: nobody is notified. */
  noReceivers: boolean;
  /** How many alerts lie outside the range, in words; null when none does. */
  rangeNote: string | null;
  /**
   * Non-empty groups in the order firing, pending, resolved, the firing and pending alerts the most severe first;
   * `more` says under the resolved one how many older resolved alerts the API left out (it lists the newest
   * 1,000), null when none.
   */
  groups: { state: AlertState; heading: string; alerts: AlertSummary[]; more: string | null }[];
  /** The empty state's text when no alert is shown. */
  empty: string | null;
}

/**
 * The alerts active in the range (on the server's clock when it says what time it is), filtered by state and
 * grouped; the rest counted. `hookName`: the hook the API was asked for alone (hookFilterName), named when none is.
 */
export function alertsView(r: AlertsResponse, state: ViewState, browserNowMs: number, hookName: string | null = null): AlertsView {
  const filter = stateFilter(state.params);
  const nowMs = r.now ? Date.parse(r.now) : browserNowMs;
  const [fromMs, toMs] = rangeBounds(state.range, nowMs);
  const alerts = r.alerts.filter((a) => activeDuring(a, fromMs, toMs));
  const shown = filter ? alerts.filter((a) => a.state === filter) : alerts;
  const hidden = r.alerts.length - alerts.length;
  const range = rangeLabel(state.range);
  const omitted = r.resolvedOmitted ?? 0;
  const of = hookName === null ? '' : ` of ${isolated(hookName)}`;
  return {
    noReceivers: r.receivers !== undefined && r.receivers.length === 0,
    rangeNote: hidden > 0 ? `Alerts active in the ${range}; ${plural(hidden, 'older alert')} outside the range ${hidden === 1 ? 'is' : 'are'} not shown.` : null,
    groups: STATES.map((s) => ({ state: s, alerts: ordered(s, shown.filter((a) => a.state === s)) }))
      .filter((g) => g.alerts.length)
      .map((g) => ({
        ...g,
        heading: `${g.state[0]?.toUpperCase()}${g.state.slice(1)} (${num(g.alerts.length)})`,
        more: g.state === 'resolved' && omitted > 0 ? `…and ${plural(omitted, 'older resolved alert')} not shown` : null,
      })),
    empty: shown.length > 0 ? null
      : filter ? `No ${filter} alerts${of} in the ${range}.`
        : hookName !== null ? `Nothing${of} was pending, firing or resolved in the ${range}.`
          : `Nothing was pending, firing or resolved in the ${range}. Alerts appear here when a hook’s output is persisted, nears the cap or is forecast to cross it.`,
  };
}

/**
 * How far the server's clock runs ahead of the browser's (behind: negative), from an answer of the alerts API
 * received at `browserNowMs`; 0 when it does not say what time it is. A silence's end and a card's link are on the
 * server's clock, as the range the page lists alerts over is: a browser's clock that is off does not cut a silence
 * short (or have the server refuse it as already ended) or end a link before the alert's latest evidence.
 */
export function clockOffset(r: Pick<AlertsResponse, 'now'>, browserNowMs: number): number {
  const serverMs = r.now ? Date.parse(r.now) : NaN;
  return Number.isFinite(serverMs) ? serverMs - browserNowMs : 0;
}

/**
 * hookwatch's annotations that hold a number or a time (collector/src/alerting/conditions.ts), by how the
 * dashboard writes them. Free text (summary, description, guard) is left as written, times in it included.
 */
const ANNOTATION_KINDS = new Map<string, 'chars' | 'count' | 'share' | 'time'>([
  ...['largest_output', 'guard_largest_output', 'headroom'].map((k) => [k, 'chars'] as const),
  ...['outputs_persisted', 'executions', 'late_outputs_persisted', 'guard_trims', 'missing', 'executions_without_sizes', 'folded_events', 'late_folded_events', 'max_hooks'].map((k) => [k, 'count'] as const),
  ['ratio', 'share'],
  ...['event_time', 'first_event_time', 'last_event', 'last_seen', 'crosses_at'].map((k) => [k, 'time'] as const),
]);
const NUMBER_FORMATS = { chars, count: num, share: pct };
const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d/;

/** A label or an annotation as a card lists it. */
export interface CardLabel {
  name: string;
  /** The value as the dashboard writes such values: "14,000 chars", a time in the chosen zone. */
  text: string;
  /** The value as the API gives it, when `text` differs: kept to copy exactly. */
  raw: string | null;
}

/**
 * The figures of the measured executions that are lower bounds of the hook's when some sent no size data (the
 * alert's `executions_without_sizes`): its summary says "at least" of these (and "at most" of the headroom, which
 * headroomText words). A count of 0 is left as it is.
 */
const AT_LEAST_WHEN_UNMEASURED = new Set(['largest_output', 'outputs_persisted', 'ratio']);

/**
 * Counts of persisted outputs a persisted alert gave as 0 when its client did not report num_outputs_persisted
 * (the output known over the cap by its measured size): hookwatch now leaves them out, those alerts still list them.
 */
const UNREPORTED_WHEN_ZERO = new Set(['outputs_persisted', 'late_outputs_persisted']);

/**
 * An annotation's value as the rest of the dashboard writes it, a bound saying so (`unmeasured`: the alert counted
 * executions without size data); a value not of its kind as it is.
 */
function annotationLabel(name: string, raw: string, unmeasured: boolean): CardLabel {
  const kind = ANNOTATION_KINDS.get(name);
  const n = raw.trim() === '' ? NaN : Number(raw);
  const shown = kind === undefined ? null
    : kind === 'time' ? (RFC3339.test(raw) && Number.isFinite(Date.parse(raw)) ? dateTime(raw) : null)
      : !Number.isFinite(n) ? null
        // The distance from the cap as the hook page words it: "at least 600 chars over the cap", never "-600 chars".
        : name === 'headroom' ? headroomText(n, unmeasured)
          : n === 0 && UNREPORTED_WHEN_ZERO.has(name) ? 'not reported'
            : NUMBER_FORMATS[kind](n);
  const text = unmeasured && shown !== null && n !== 0 && AT_LEAST_WHEN_UNMEASURED.has(name) ? `at least ${shown}` : shown;
  return text === null || text === raw ? { name, text: raw, raw: null } : { name, text, raw };
}

/** What one alert's card says. */
export interface CardView {
  /**
   * `superseded` when a persisted alert took over, `data-expired` when it ended because its hook's data left
   * retention (dataExpired), else the alert's state.
   */
  state: AlertState | 'superseded' | 'data-expired';
  subject: { text: string; kind: 'hook' | 'clients' | 'feed' | 'alert' };
  silencedBy: string | null;
  /** Labels (as they are), then annotations (counts, sizes and times as the dashboard writes them), as the card lists them. */
  labels: CardLabel[];
  /** The line of times: active, firing, resolved (or superseded), notified. */
  times: string[];
}

/** Who silenced an alert and until when, from the silences in force (the id of one not among them); null when none did. */
function silencedByText(a: AlertSummary, silences: readonly Silence[]): string | null {
  const by = a.silencedBy.map((id) => {
    const s = silences.find((x) => x.id === id);
    return s ? `${s.createdBy} until ${dateTime(s.endsAt)}` : id;
  });
  return by.length ? `silenced by ${by.join(', ')}` : null;
}

/** `silences`: those in force, to say who silenced the alert and until when. */
export function cardView(a: AlertSummary, all: readonly AlertSummary[], receivers: string[] | undefined, silences: readonly Silence[] = []): CardView {
  const by = supersededBy(a, all);
  const expired = !by && dataExpired(a);
  return {
    state: by ? 'superseded' : expired ? 'data-expired' : a.state,
    subject: alertSubject(a),
    silencedBy: silencedByText(a, silences),
    labels: [...Object.entries(a.labels).map(([name, text]) => ({ name, text, raw: null })), ...Object.entries(a.annotations).map(([k, v]) => annotationLabel(k, v, Number(a.annotations['executions_without_sizes'] ?? 0) > 0))],
    times: [`active since ${dateTime(a.activeAt)}`, a.startsAt ? ` · firing since ${dateTime(a.startsAt)}` : '',
      a.endsAt ? ` · ${by ? 'superseded' : expired ? 'ended (hook data expired)' : 'resolved'} ${dateTime(a.endsAt)}` : '',
      notifiedText(a, receivers)],
  };
}

/**
 * Whether anyone heard of the alert, by receiver: a notification sent out is not one delivered (a receiver
 * answering 404 gave up on it), so the card says which arrived, which are retrying and which failed, and of a
 * resolved alert whether the receiver heard of its resolution.
 */
function notifiedText(a: AlertSummary, receivers: string[] | undefined): string {
  if (a.deliveries.length > 0) {
    return a.deliveries.map((d) => {
      const http = d.httpStatus === null ? '' : ` (HTTP ${d.httpStatus})`;
      if (d.outcome === 'delivered') {
        // Resolved: whether the receiver heard it cleared, or only that it fired (a silence muted its resolution).
        if (a.state !== 'resolved') return ` · ${d.receiver} notified ${dateTime(d.at)}`;
        // Ended with its hook's data, not resolved: what the receiver was told of is its end.
        const end = dataExpired(a) ? 'end' : 'resolution';
        return d.status === 'resolved' ? ` · ${d.receiver} notified of its ${end} ${dateTime(d.at)}` : ` · ${d.receiver} notified of its firing ${dateTime(d.at)}, not of its ${end}`;
      }
      if (d.outcome === 'retrying') return ` · delivery to ${d.receiver} retrying${http}, last tried ${dateTime(d.at)}`;
      return ` · delivery to ${d.receiver} failed${http} ${dateTime(d.at)}: nobody there was notified`;
    }).join('');
  }
  if (a.lastNotifiedAt) return ` · notification sent out ${dateTime(a.lastNotifiedAt)}, not yet delivered`;
  return receivers && receivers.length === 0 ? ' · no receiver is configured: shown here only, nobody is notified' : ' · not notified yet';
}

/** The silence form's summary line, by what the alert is about. */
export const SILENCE_SUMMARY: Record<CardView['subject']['kind'], string> = { hook: 'Silence this hook', clients: 'Silence these clients', feed: 'Silence this alert', alert: 'Silence this alert' };

/**
 * The sentence before the silence form's fields. The subject and the label values (a hook name, a client's version)
 * are isolated: a right-to-left override in one turns nothing after it in the sentence around.
 */
export function silencePrompt(a: AlertSummary): string {
  return `Silence ${isolated(alertSubject(a).text)} (matching ${hookMatchers(a).map((m) => `${m.name}=${isolated(m.value)}`).join(', ') || 'nothing'}) for `;
}

/**
 * The silence a form creates of its matchers (a card's: hookMatchers), ending `durationMs` after `nowMs`, the
 * server's now (clockOffset). No startsAt: the server starts it on its own clock, so a browser clock that runs
 * behind cannot create a silence that only begins later.
 */
export function silenceRequest(matchers: SilenceMatcher[], durationMs: number, createdBy: string, comment: string, nowMs: number): { matchers: SilenceMatcher[]; endsAt: string; createdBy: string; comment: string } {
  return { matchers, endsAt: new Date(nowMs + durationMs).toISOString(), createdBy, comment };
}

/**
 * The silence a notification's link asks for (silence-link.ts): an equality matcher per label of its alert, as
 * Alertmanager's "Silence" button prefills them; none when the URL is no silence link.
 */
export function linkMatchers(params: URLSearchParams): SilenceMatcher[] {
  return silenceLabels(params).map(([name, value]) => ({ name, value, isRegex: false, isEqual: true }));
}

/** The URL (path and query) without a silence link's labels: the same page, with no silence form to open. */
export function withoutSilenceLink(loc: { pathname: string; search: string }): string {
  const params = new URLSearchParams(loc.search);
  for (const k of [...params.keys()]) if (k.startsWith(SILENCE_PARAM)) params.delete(k);
  const qs = params.toString();
  return loc.pathname + (qs ? `?${qs}` : '');
}

/** What a silence form says when no matcher is left to it: Alertmanager refuses a silence of none as well. */
export const NO_MATCHER = 'Keep at least one matcher: a silence with none would mute every alert.';

/**
 * What the linked silence form says of the alert it was linked from (the one whose labels are its matchers),
 * so a person opening a link someone else already followed sees the silence they made.
 */
export function linkedAlertText(matchers: readonly SilenceMatcher[], all: readonly AlertSummary[], silences: readonly Silence[]): string {
  const a = all.find((x) => Object.keys(x.labels).length === matchers.length && matchers.every((m) => x.labels[m.name] === m.value));
  if (!a) return 'No alert with these labels is listed now; the silence mutes it should it fire.';
  const by = silencedByText(a, silences);
  return `The alert is ${a.state}${by ? `, ${by}` : ''}.`;
}

/** What the form says once the silence exists. */
export function silencedText(endsAtMs: number, id: string | undefined): string {
  return `Silenced until ${dateTime(endsAtMs)}${id ? ` (silence ${id})` : ''}. `;
}

/** The delivery attempts table's rows; null when nothing was attempted yet. */
export function attemptRows(detail: AlertDetailResponse): string[][] | null {
  if (detail.attempts.length === 0) return null;
  return detail.attempts.map((t) => [t.receiver, t.status, num(t.attempt), dateTimeSeconds(t.at), t.outcome, t.httpStatus === null ? '–' : String(t.httpStatus), t.error === null ? '' : readableError(t.error), `${num(t.durationMs)} ms`]);
}

/** A matcher as Alertmanager and amtool write it: name="value", !=, =~ or !~. */
export function matcherText(m: SilenceMatcher): string {
  const op = m.isRegex ? (m.isEqual === false ? '!~' : '=~') : (m.isEqual === false ? '!=' : '=');
  return `${m.name}${op}${JSON.stringify(m.value)}`;
}

/** One silence in force (active, or pending until it starts), as the page's silences table lists it. */
export interface SilenceRow {
  id: string;
  state: 'active' | 'pending';
  matchers: string;
  /** "until …" for an active silence, "from … until …" for one that starts later. */
  when: string;
  createdBy: string;
  comment: string;
}

/**
 * The silences in force, in the API's order (newest first): whoever silenced what, why and until when, so a
 * silence made earlier (here or through the API) can be found and expired after the page was reloaded. Expired
 * ones are left out: they mute nothing.
 */
export function silenceRows(silences: readonly Silence[]): SilenceRow[] {
  return silences.filter((s): s is Silence & { state: 'active' | 'pending' } => s.state !== 'expired').map((s) => ({
    id: s.id,
    state: s.state,
    matchers: s.matchers.map(matcherText).join(', '),
    when: s.state === 'pending' ? `from ${dateTime(s.startsAt)} until ${dateTime(s.endsAt)}` : `until ${dateTime(s.endsAt)}`,
    createdBy: s.createdBy,
    comment: s.comment,
  }));
}
