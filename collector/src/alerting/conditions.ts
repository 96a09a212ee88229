/**
 * The rules' conditions, with no I/O: counters (or a trend, a client version, a last-seen time) in; annotations a
 * person can act on out when the condition holds, null when it does not. rules.ts runs the store queries that
 * feed them.
 */
import type { ClientVersion, HookCounters } from '../../../shared/src/api.ts';
import { FIRST_VERSION_WITH_SIZES, OUTPUT_CAP_CHARS, PREVIEW_CHARS, largestOutput, measuredOnly, persistedAtLeast, sizesMaySum } from '../../../shared/src/cliff.ts';
import { forecastCrossing, type Point } from '../../../shared/src/forecast.ts';
import type { GuardTrimStats } from '../store/guard-trims.ts';
import type { Arrival, ArrivalCounters, FleetBucket } from '../store/store.ts';
import { DEFAULT_GUARD_BUDGET } from '../tools/guard/trim.ts';
import type { RuleConfig } from './settings.ts';
import { formatRfc3339 } from '../rfc3339.ts';

type Annotations = Record<string, string>;

const DAY = 86_400_000;
/**
 * A whole number as en-US writes it (12,000), as Number#toLocaleString('en-US') does: every evaluation formats
 * each hook's counts, and the ICU call costs several times this loop. Anything but a safe integer goes to ICU.
 */
export function formatCount(n: number): string {
  const r = Math.round(n);
  if (!Number.isSafeInteger(r) || Object.is(r, -0)) return r.toLocaleString('en-US');
  const digits = String(Math.abs(r));
  let out = digits.slice(0, ((digits.length - 1) % 3) + 1);
  for (let i = out.length; i < digits.length; i += 3) out += `,${digits.slice(i, i + 3)}`;
  return r < 0 ? `-${out}` : out;
}
const fmt = formatCount;
const plural = (n: number, one: string, many = one + 's'): string => `${fmt(n)} ${n === 1 ? one : many}`;

/** What an alert says of `n` late arrivals: when they were stamped, and that they arrived in the window `w`. */
function lateSentence(n: number, late: Pick<ArrivalCounters, 'firstEventMs' | 'lastEventMs'>, w: string): string {
  const first = formatRfc3339(late.firstEventMs);
  const stamped = late.firstEventMs === late.lastEventMs ? first : `${first} to ${formatRfc3339(late.lastEventMs)}`;
  return ` ${plural(n, 'of them', 'of them')} arrived late: stamped ${stamped}, received in the last ${w}.`;
}

/** The annotations naming late arrivals' event times (the earliest is read back as AlertRecord.firstEventMs). */
function lateTimes(late: Pick<ArrivalCounters, 'firstEventMs' | 'lastEventMs'>): { event_time: string; first_event_time: string } {
  return { event_time: formatRfc3339(late.lastEventMs), first_event_time: formatRfc3339(late.firstEventMs) };
}

/**
 * What an alert says of a hook some of whose executions carried no size data (a client before 2.1.280, or another
 * exporter): those may have gone over the cap too, so its counts of lost outputs and its largest output are lower
 * bounds ("at least") and its headroom an upper one ("at most"); unknown is never read as zero. Empty for a hook
 * whose every execution was measured.
 */
function blindness(c: Pick<HookCounters, 'executions' | 'sizeUnknownExecutions'>): { atLeast: string; atMost: string; note: string; sentence: string; annotations: Annotations } {
  const n = c.sizeUnknownExecutions;
  if (n <= 0) return { atLeast: '', atMost: '', note: '', sentence: '', annotations: {} };
  const note = `${fmt(n)} of ${plural(c.executions, 'execution')} carried no size data`;
  const one = n === 1;
  return {
    atLeast: 'at least ',
    atMost: 'at most ',
    note,
    // What a description ends with.
    sentence: ` ${note} (${one ? 'a client' : 'clients'} before ${FIRST_VERSION_WITH_SIZES}): ${one ? 'it' : 'they'} may have gone over the cap too.`,
    annotations: { executions_without_sizes: String(n) },
  };
}

/** `text` with its first letter upper-cased (a sentence that may begin with "at least"). */
const capitalized = (text: string): string => text.charAt(0).toUpperCase() + text.slice(1);

/** Human window: 1h, 24h, 14d. */
export function windowText(ms: number): string {
  if (ms % DAY === 0 && ms >= 2 * DAY) return `${ms / DAY}d`;
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  return `${Math.round(ms / 1000)}s`;
}

/**
 * A time measured (how long a hook or the feed has been quiet) as a person reads it: its two largest units, cut
 * rather than rounded, as windowText writes a setting (45s, 1h 30m, 30h, 5d 2h), never 442282s.
 */
function elapsedText(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m`;
  const [h, mm] = [Math.floor(m / 60), m % 60];
  if (h < 48) return mm ? `${h}h ${mm}m` : `${h}h`;
  const [d, hh] = [Math.floor(h / 24), h % 24];
  return hh ? `${d}d ${hh}h` : `${d}d`;
}

/**
 * What a hook's author does about an output at or over the cap: how to find the string, the fix, and (once it is
 * over) what keeps the model reading most of it meanwhile.
 */
const CHECK_ACTION = '`hookwatch check -- <hook command>` measures each output string of the hook against the cap';
// The guard is named by --install, not as `hookwatch guard -- ...` to write into settings.json: Claude Code's PATH
// need not hold hookwatch, and a hook calling it there would fail and deliver nothing. check prints the line for one.
const PERSISTED_ACTION = `Keep each output under ${fmt(OUTPUT_CAP_CHARS)} characters: ${CHECK_ACTION}; until it is fixed, \`hookwatch guard --install <settings file>\` wraps every command hook so that each output keeps the first ~${fmt(DEFAULT_GUARD_BUDGET)} characters and a pointer to the rest instead of a ~${fmt(PREVIEW_CHARS)}-character preview (for one hook, check prints the command line that wraps it).`;

/** Before the cap: find the string that grows and shorten it; `--budget` makes check fail before the cap does. */
const NEAR_ACTION = `Shorten it before it crosses: ${CHECK_ACTION} (with \`--budget ${DEFAULT_GUARD_BUDGET}\` it fails above that, for CI).`;

/**
 * What a `persisted` alert says of the hook's outcome in its window: success (the headline divergence: the model got
 * a preview while the hook said all was well), no success (the failures counted), or nothing reported. A record
 * without num_success adds nothing to the counts: unknown, neither a success nor a failure.
 */
function outcomeOf(c: Pick<HookCounters, 'success' | 'blocking' | 'nonBlockingError' | 'cancelled'>): { success: boolean; text: string } {
  if (c.success > 0) return { success: true, text: `the model saw only a ~${fmt(PREVIEW_CHARS)}-character preview while the hook reported success` };
  const failures = [
    c.blocking > 0 ? plural(c.blocking, 'blocking error') : '',
    c.nonBlockingError > 0 ? plural(c.nonBlockingError, 'non-blocking error') : '',
    c.cancelled > 0 ? plural(c.cancelled, 'cancelled', 'cancelled') : '',
  ].filter(Boolean);
  if (failures.length > 0) return { success: false, text: `the hook reported no success (${failures.join(', ')})` };
  return { success: false, text: 'the hook did not report its outcome (no success or failure counted)' };
}

/**
 * persisted: outputs saved to a file instead of delivered, whatever the hook reported of its outcome (outcomeOf);
 * `late` names arrivals stamped before the window.
 */
export function persistedCondition(c: HookCounters, scope: string, windowMs: number, late: ArrivalCounters | undefined): Annotations | null {
  // The headline divergence: Claude Code saved output to a file while the hook reported success. A client that
  // does not send num_outputs_persisted (older than 2.1.280) still shows it: a measured output over the cap. A hook
  // that reported no success, or no outcome at all (a record without num_success), lost the output all the same:
  // the alert is raised and says what the hook reported.
  const inferred = c.outputsPersisted <= 0 ? c.executionsWithPersisted : 0;
  if (c.outputsPersisted <= 0 && inferred <= 0) return null;
  const outcome = outcomeOf(c);
  const w = windowText(windowMs);
  const max = largestOutput(c);
  const b = blindness(c);
  // The late ones counted at least once per execution over the cap, reported or measured: never "0 of them".
  const lateText = late ? lateSentence(persistedAtLeast(late), late, w) : '';
  // Some clients reported their count, others' executions are known over the cap by measured size only (one
  // output each at least): the count is a lower bound, never the reported one given bare.
  const partlyMeasured = inferred <= 0 && measuredOnly(c) > 0;
  const outputs = partlyMeasured ? persistedAtLeast(c) : c.outputsPersisted;
  return {
    summary: inferred > 0
      ? `${scope}: ${b.atLeast}${plural(inferred, 'execution')} in the last ${w} with an output over the ${fmt(OUTPUT_CAP_CHARS)}-character cap, which Claude Code saves to a file${outcome.success ? '' : ' instead of delivering it'}; ${outcome.text} (measured size: this client does not report num_outputs_persisted).`
      : `${scope}: ${b.atLeast || (partlyMeasured ? 'at least ' : '')}${plural(outputs, 'output')} over the ${fmt(OUTPUT_CAP_CHARS)}-character cap saved to a file${outcome.success ? '' : ' instead of delivered'} in the last ${w}; ${outcome.text}${partlyMeasured ? ' (measured size where a client does not report num_outputs_persisted)' : ''}.`,
    description: `${capitalized(`${b.atLeast}${fmt(c.executionsWithPersisted)}`)} of ${plural(c.executions, 'execution')} lost output${max !== null ? `; largest reported output ${b.atLeast}${fmt(max)} characters` : ''}.${b.sentence}${lateText} ${PERSISTED_ACTION} It clears once ${w} passes with no output persisted${late ? ' (late ones counted from their arrival)' : ''}.`,
    // A count the clients did not report (executions over the cap without it) is not given, never as 0.
    ...(measuredOnly(c) > 0 ? {} : { outputs_persisted: String(c.outputsPersisted) }),
    executions: String(c.executions),
    ...(max !== null ? { largest_output: String(max) } : {}),
    ...b.annotations,
    ...(late ? { ...lateTimes(late), ...(measuredOnly(late) > 0 ? {} : { late_outputs_persisted: String(late.outputsPersisted) }) } : {}),
  };
}

/** persisted_ratio: the share of executions with output persisted is over the threshold, with enough executions. */
export function ratioCondition(rule: Pick<RuleConfig, 'windowMs' | 'threshold' | 'minExecutions'>, c: HookCounters, scope: string): Annotations | null {
  if (c.executions < rule.minExecutions) return null;
  const ratio = c.executionsWithPersisted / c.executions;
  if (ratio <= rule.threshold) return null;
  const b = blindness(c);
  // Outputs measured over the cap count one each (the client did not report how many): at least that many, never 0.
  const outputs = persistedAtLeast(c);
  const outputsAtLeast = b.atLeast || (measuredOnly(c) > 0 ? 'at least ' : '');
  return {
    summary: `${scope}: ${b.atLeast}${(ratio * 100).toFixed(1)}% of executions in the last ${windowText(rule.windowMs)} had output saved to a file instead of delivered (threshold ${(rule.threshold * 100).toFixed(1)}%).`,
    description: `${capitalized(`${b.atLeast}${fmt(c.executionsWithPersisted)}`)} of ${plural(c.executions, 'execution')}; ${outputsAtLeast}${plural(outputs, 'output')} persisted.${b.sentence}`,
    ratio: ratio.toFixed(4),
    ...b.annotations,
  };
}

/** headroom: the largest output is above `threshold` of the cap while nothing was persisted. */
export function headroomCondition(rule: Pick<RuleConfig, 'windowMs' | 'threshold'>, c: HookCounters, scope: string): Annotations | null {
  const limit = rule.threshold * OUTPUT_CAP_CHARS;
  const w = windowText(rule.windowMs);
  // A hook already over the cap is the persisted rule's: one alert per problem, not two (also when the client
  // reports no num_outputs_persisted and the over-cap output is known from its measured size).
  if (c.outputsPersisted > 0 || c.executionsWithPersisted > 0) return null;
  const max = largestOutput(c);
  if (max === null || max <= limit) return null;
  const b = blindness(c);
  const blind = b.note ? `; ${b.note}` : '';
  // Sizes are sums over the hooks of an execution (num_hooks): a sum can pass the cap while no single output did.
  // Executions that each ran one command report one output's size: said plainly then.
  const summed = sizesMaySum(c);
  return {
    // "None was persisted" is not known: a client that sends the sizes without num_outputs_persisted adds nothing
    // to the count, as one that reports 0 does, and the counters do not tell the two apart.
    summary: max > OUTPUT_CAP_CHARS
      ? `${scope}: largest output in the last ${w} is ${b.atLeast}${fmt(max)} characters, ${b.atLeast}${fmt(max - OUTPUT_CAP_CHARS)} over the ${fmt(OUTPUT_CAP_CHARS)}-character cap${summed ? ' summed over the hooks that ran' : ''}; no output was reported persisted (alert above ${fmt(limit)})${blind}.`
      : `${scope}: largest output in the last ${w} is ${b.atLeast}${fmt(max)} characters, ${b.atMost}${fmt(OUTPUT_CAP_CHARS - max)} below the ${fmt(OUTPUT_CAP_CHARS)}-character cap (alert above ${fmt(limit)})${blind}.`,
    description: `Past the cap the model gets a ~${fmt(PREVIEW_CHARS)}-character preview instead. ${summed
      ? 'Sizes are sums over the hooks that ran, so this is an upper bound of the largest single output.'
      : `Each execution ran one hook command, so ${fmt(max)} characters is the largest ${b.atLeast ? 'measured ' : ''}output's size.`} ${NEAR_ACTION}`,
    largest_output: String(max),
    headroom: String(OUTPUT_CAP_CHARS - max),
    ...b.annotations,
  };
}

/** What overCapCondition reads of a hook's window: its counts, and its largest output (null: none measured). */
export type OverCapCounters = Pick<HookCounters, 'executions' | 'sizeUnknownExecutions' | 'outputsPersisted' | 'executionsWithPersisted'> & { largest: number | null };

/**
 * headroom, growth: the hook went over the cap in the window (outputs persisted, reported or measured), which is a
 * `persisted` rule's. What their alert says then: held for a persisted alert still pending, or raised on its own
 * when no persisted rule can fire on it (rules.ts RuleContext.persistedFires). `limit`: the headroom rule's alert
 * threshold in characters, named as its other summaries name it.
 */
export function overCapCondition(c: OverCapCounters, scope: string, windowMs: number, limit?: number): Annotations {
  const max = c.largest;
  const b = blindness(c);
  // Executions measured over the cap count one output each (the client did not report how many): at least that many.
  const measured = measuredOnly(c) > 0;
  const outputs = measured ? persistedAtLeast(c) : c.outputsPersisted;
  const atLeast = b.atLeast || (measured ? 'at least ' : '');
  const largest = max !== null && max > OUTPUT_CAP_CHARS ? `; largest output ${b.atLeast}${fmt(max)} characters, ${b.atLeast}${fmt(max - OUTPUT_CAP_CHARS)} over the cap` : '';
  return {
    summary: `${scope}: ${atLeast}${plural(outputs, 'output')} over the ${fmt(OUTPUT_CAP_CHARS)}-character cap in the last ${windowText(windowMs)}, saved to a file: the model got a ~${fmt(PREVIEW_CHARS)}-character preview instead${largest}${limit === undefined ? '' : ` (alert above ${fmt(limit)})`}.`,
    description: `The hook went over the cap, which a \`persisted\` rule alerts on.${b.sentence} ${PERSISTED_ACTION}`,
    ...(measured ? {} : { outputs_persisted: String(c.outputsPersisted) }),
    ...(max !== null ? { largest_output: String(max) } : {}),
    ...b.annotations,
  };
}

/**
 * Whether the condition of `persisted`, `headroom` or `growth` may hold among the executions without size data, which it
 * cannot see: any of them may have gone over the cap, or near it. Such an alert stays as it is rather than
 * resolve (unknown is not the all-clear).
 */
export function mayHoldUnmeasured(c: Pick<HookCounters, 'sizeUnknownExecutions'>): boolean {
  return c.sizeUnknownExecutions > 0;
}

/**
 * Whether the share of persisted_ratio may be over its threshold once the executions without size data are
 * counted as lost (each may have been): its alert then stays as it is rather than resolve on a share they dilute.
 */
export function ratioMayHold(rule: Pick<RuleConfig, 'threshold' | 'minExecutions'>, c: HookCounters): boolean {
  if (c.executions < rule.minExecutions || c.sizeUnknownExecutions <= 0) return false;
  return Math.min(c.executions, c.executionsWithPersisted + c.sizeUnknownExecutions) / c.executions > rule.threshold;
}

/**
 * The annotations an alert on a guarded hook carries: `hookwatch guard` trims that hook's outputs already, so sizes
 * near or over the cap are what it is there for. Read as the alert becomes active, and again only when guard
 * trims of its hook are stored while it is active (AlertEngine.noteGuardTrims); kept over the episode
 * (lifecycle.ts), though each evaluation rewrites the rest of the annotations.
 */
export const GUARD_ANNOTATIONS = ['guard', 'guard_trims', 'guard_largest_output'] as const;

/**
 * What `hookwatch guard` trimmed of a hook's outputs in the window before the alert became active, and, with
 * `since`, from then until the read: its GUARD_ANNOTATIONS; null when nothing.
 */
export function guardTrimsNote(windowMs: number, t: GuardTrimStats, since = false): Annotations | null {
  if (t.trims <= 0) return null;
  const largest = t.largest ? `; the largest was ${fmt(t.largest.sentChars)} characters (${t.largest.field}), ${fmt(t.largest.keptChars)} delivered` : '';
  return {
    guard: `\`hookwatch guard\` already trims this hook: ${plural(t.trims, 'output')} trimmed in the ${windowText(windowMs)} before the alert became active${since ? ' and since' : ''}${largest}.`,
    guard_trims: String(t.trims),
    ...(t.largest ? { guard_largest_output: String(t.largest.sentChars) } : {}),
  };
}

/** never_completed: starts without a complete in the window that ends `after` ago. */
export function neverCompletedCondition(rule: Pick<RuleConfig, 'windowMs' | 'afterMs'>, c: HookCounters, scope: string): Annotations | null {
  const missing = c.starts - c.executions;
  if (missing <= 0) return null;
  return {
    summary: `${scope}: ${plural(missing, 'execution')} started without completing in the ${windowText(rule.windowMs)} up to ${windowText(rule.afterMs)} ago.`,
    description: `${fmt(c.starts)} hook_execution_start vs ${fmt(c.executions)} hook_execution_complete. A blocked UserPromptSubmit hook in -p mode, a crash or a cancelled session sends start and never complete; its output never reached the model.`,
    missing: String(missing),
  };
}

/** A day of a hook's series as the growth rule reads it: its executions, and how many of them sent no size data. */
export type GrowthDay = Pick<FleetBucket, 'bucketMs' | 'executions' | 'sizeUnknownExecutions'>;

/**
 * growth: the daily largest output (sorted points) is on course to reach the cap within `horizonDays`. `days`, the
 * hook's days in the window, tell how much of it was measured: executions without size data are not in the trend
 * (their outputs may have been larger), and the notification says how many there were and whether the latest days
 * were unmeasured.
 */
export function growthCondition(rule: Pick<RuleConfig, 'horizonDays'>, points: readonly Point[], hookName: string, now: number, days: readonly GrowthDay[] = []): Annotations | null {
  const f = forecastCrossing([...points], now);
  // A stale trend (no size data for over four days) has no crossing: a quiet hook is not growing.
  if (!f || f.daysToCap === null || f.crossesAtMs === null || f.daysToCap > rule.horizonDays) return null;
  const at = Math.max(f.crossesAtMs, now);
  const when = f.daysToCap < 1 ? 'within a day' : `in about ${f.daysToCap.toFixed(1)} days (${formatRfc3339(at).slice(0, 10)})`;
  const lastDay = formatRfc3339(f.lastMs).slice(0, 10);
  const u = unmeasuredDays(days, f.lastMs);
  const measured = u.unknown <= 0 ? '' : `; ${fmt(u.executions - u.unknown)} of ${plural(u.executions, 'execution')} measured`
    + (f.points < u.ran ? `, on ${fmt(f.points)} of the ${fmt(u.ran)} days the hook ran` : '')
    + (u.latest > 0 ? `, none on the latest${u.latest === 1 ? ' day' : ` ${fmt(u.latest)}`}` : '');
  const one = u.unknown === 1;
  const unmeasured = u.unknown <= 0 ? '' : ` ${fmt(u.unknown)} of ${plural(u.executions, 'execution')} carried no size data (${one ? 'a client' : 'clients'} before ${FIRST_VERSION_WITH_SIZES})`
    + (u.latest > 0 ? `, including every execution of the ${u.latest === 1 ? 'day' : `${fmt(u.latest)} days`} since ${lastDay}` : '')
    + `: ${one ? 'its output may have been larger, and is' : 'their outputs may have been larger, and are'} not in the trend.`;
  return {
    summary: `${hookName}: the daily largest output grows ${fmt(f.slopePerDay)} characters a day and reaches the ${fmt(OUTPUT_CAP_CHARS)}-character cap ${when}${measured}.`,
    description: `Trend over ${f.points} days with data, at about ${fmt(f.current)} characters on ${lastDay}.${unmeasured} Past the cap the model gets a ~${fmt(PREVIEW_CHARS)}-character preview. ${NEAR_ACTION}`,
    days_to_cap: f.daysToCap.toFixed(1),
    crosses_at: formatRfc3339(at),
    ...(u.unknown > 0 ? { executions_without_sizes: String(u.unknown) } : {}),
  };
}

/**
 * Of a hook's days: its executions, those without size data, the days it ran, and how many of those came after the
 * trend's last day (`lastMs`), every execution of them unmeasured.
 */
function unmeasuredDays(days: readonly GrowthDay[], lastMs: number): { executions: number; unknown: number; ran: number; latest: number } {
  const ran = days.filter((d) => d.executions > 0);
  return {
    executions: ran.reduce((n, d) => n + d.executions, 0),
    unknown: ran.reduce((n, d) => n + d.sizeUnknownExecutions, 0),
    ran: ran.length,
    latest: ran.filter((d) => d.bucketMs > lastMs).length,
  };
}

/** blind: a client version that sent executions without size data. */
export function blindCondition(rule: Pick<RuleConfig, 'windowMs'>, v: ClientVersion): Annotations | null {
  if (v.sizeUnknownExecutions <= 0) return null;
  return {
    summary: `${v.serviceName} ${v.version || '(unknown version)'}: ${fmt(v.sizeUnknownExecutions)} of ${plural(v.executions, 'execution')} in the last ${windowText(rule.windowMs)} carried no size data, so hookwatch cannot see the cliff for these users.`,
    description: `Claude Code reports hook output sizes from ${FIRST_VERSION_WITH_SIZES} on; upgrade these clients (pin @anthropic-ai/claude-code to a current version; on Node 20 npm silently installs 2.1.197).`,
    executions_without_sizes: String(v.sizeUnknownExecutions),
  };
}

/** silence (feed): no event at all for `after`; null lastMs (nothing ever received) is not a silence. */
export function quietFeedCondition(rule: Pick<RuleConfig, 'afterMs'>, lastMs: number | null, now: number): Annotations | null {
  if (lastMs === null || now - lastMs < rule.afterMs) return null;
  return {
    summary: `No hook events at all for ${elapsedText(now - lastMs)} (alert after ${windowText(rule.afterMs)}); last event ${formatRfc3339(lastMs)}.`,
    description: 'Check that clients still export telemetry (CLAUDE_CODE_ENABLE_TELEMETRY=1, OTEL_LOGS_EXPORTER=otlp) and can reach hookwatch.',
    last_event: formatRfc3339(lastMs),
  };
}

/** silence (hook): a hook that was active went quiet for `after`. */
export function quietHookCondition(rule: Pick<RuleConfig, 'afterMs'>, hookName: string, lastSeenMs: number, now: number): Annotations | null {
  const quietFor = now - lastSeenMs;
  if (quietFor < rule.afterMs) return null;
  return {
    summary: `${hookName}: no executions for ${elapsedText(quietFor)} (alert after ${windowText(rule.afterMs)}); last seen ${formatRfc3339(lastSeenMs)}.`,
    description: 'The hook was active and went quiet: removed from settings, failing before it runs, or its clients stopped exporting.',
    last_seen: formatRfc3339(lastSeenMs),
  };
}

/**
 * silence (hook): the annotations an alert on a quiet hook ends with once retention has removed the hook's data
 * (`annotations`, its last ones, name when it was last seen): it ends because hookwatch no longer keeps the hook,
 * never as heard again.
 */
export function expiredHookAnnotations(annotations: Readonly<Annotations>, hookName: string): Annotations {
  const last = annotations['last_seen'];
  return {
    ...annotations,
    summary: `${hookName}: the hook's data left retention with no execution since${last ? ` ${last}` : ''}: this alert ends because hookwatch no longer keeps the hook, not because it was heard again.`,
    description: 'hookwatch removes a hook once none of its events or rollups is left in retention (retention.events, retention.rollups). If the hook should still run: removed from settings, failing before it runs, or its clients stopped exporting.',
    data_expired: 'true',
  };
}

/**
 * hook_limit: events of new hook names counted under an overflow hook (store.maxHooks reached); `c` counts those of
 * the window by event time and by arrival, `late` names the arrivals stamped before the window.
 */
export function hookLimitCondition(rule: Pick<RuleConfig, 'windowMs'>, c: HookCounters | undefined, overflowName: string, maxHooks: number, late?: Arrival): Annotations | null {
  const n = c ? c.executions + c.starts : 0;
  if (n <= 0) return null;
  const w = windowText(rule.windowMs);
  const lateEvents = late ? late.executions + late.starts : 0;
  const lateText = late && lateEvents > 0 ? lateSentence(lateEvents, late, w) : '';
  return {
    summary: `${plural(n, 'hook event')} of new hook names in the last ${w} were counted under ${overflowName}: hookwatch holds its limit of ${fmt(maxHooks)} hooks (store.maxHooks).`,
    description: `Their counts are kept but not per hook. A client sending a new hook_name per execution (a timestamp or id in the name) is the usual cause; otherwise raise store.maxHooks. Hooks with nothing left in retention are removed, which frees room.${lateText}`,
    folded_events: String(n),
    max_hooks: String(maxHooks),
    ...(late && lateEvents > 0 ? { ...lateTimes(late), late_folded_events: String(lateEvents) } : {}),
  };
}
