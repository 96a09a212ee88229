/**
 * The alerting settings (`alerting.*`): the rules, parsed strictly once (the row's validator calls the same
 * parser), with messages that name the bad key; the evaluation and repeat intervals; and, at their place in
 * the table, the rows of notify/settings.ts, whose receivers and delivery this stage drives. A leaf: config/
 * composes these rows into the one table.
 */
import { ConfigError, SettingError, durationWithin as duration, isMapping as isMap, validator, type Setting, type SettingValues } from '../config/setting.ts';
import { formatDuration, quotedKey, readNumber } from '../config/values.ts';
import { DELIVERY_SETTINGS, RECEIVERS_SETTING, notifyConfig, type NotifyConfig } from '../notify/settings.ts';

/** The rule kinds hookwatch evaluates. */
export const RULE_KINDS = ['persisted', 'persisted_ratio', 'headroom', 'growth', 'blind', 'silence', 'never_completed', 'hook_limit'] as const;
export type RuleKind = (typeof RULE_KINDS)[number];

/** One rule, with every default filled in. */
export interface RuleConfig {
  /** The alertname label; unique. Defaults to the kind. */
  name: string;
  kind: RuleKind;
  /** How long the condition must hold before pending becomes firing. */
  forMs: number;
  /** How long a firing alert stays firing after its condition clears. */
  keepFiringForMs: number;
  severity: string;
  /** Range the rule looks at (growth: days of history). */
  windowMs: number;
  /** Dimension to split each hook's alert by (e.g. team, organization.id); null for none. */
  groupBy: string | null;
  /** persisted_ratio: share of executions (0..1); headroom: fraction of the cap (0..1). */
  threshold: number;
  /** persisted_ratio: fewest executions in the window before the ratio means anything. */
  minExecutions: number;
  /** growth: alert when the trend reaches the cap within this many days. */
  horizonDays: number;
  /** silence: quiet time before alerting; never_completed: grace for a complete still in flight. */
  afterMs: number;
  /** silence: one alert per hook, or one for the whole feed. */
  scope: 'hook' | 'feed';
  /** Labels added to every alert of the rule (routing in Alertmanager: team, source, ...), as in Prometheus rules. */
  labels: Record<string, string>;
}

const DAY = 86_400_000;

/** Label name for a dimension: dots become underscores (organization.id -> organization_id), as labels are identifiers. */
export function dimensionLabel(dimension: string): string {
  return dimension.replace(/[^a-zA-Z0-9_]/g, '_');
}

/**
 * `for` when a rule sets none. never_completed: a start near the end of the window whose complete landed just past
 * it looks missing until the window moves past the complete (at most the hook's run time); pending for 10 minutes
 * first, such an edge never notifies, and a start that truly never completes still does.
 */
const DEFAULT_FOR_MS: Partial<Record<RuleKind, number>> = { never_completed: 600_000 };

const KIND_DEFAULTS: Record<RuleKind, Omit<RuleConfig, 'name' | 'kind' | 'forMs' | 'keepFiringForMs' | 'groupBy' | 'scope' | 'labels'> & { scope?: 'hook' | 'feed' }> = {
  persisted: { severity: 'critical', windowMs: 3_600_000, threshold: 0, minExecutions: 1, horizonDays: 0, afterMs: 0 },
  persisted_ratio: { severity: 'warning', windowMs: DAY, threshold: 0.05, minExecutions: 20, horizonDays: 0, afterMs: 0 },
  headroom: { severity: 'warning', windowMs: DAY, threshold: 0.8, minExecutions: 1, horizonDays: 0, afterMs: 0 },
  growth: { severity: 'warning', windowMs: 14 * DAY, threshold: 0, minExecutions: 1, horizonDays: 14, afterMs: 0 },
  blind: { severity: 'warning', windowMs: DAY, threshold: 0, minExecutions: 1, horizonDays: 0, afterMs: 0 },
  silence: { severity: 'warning', windowMs: 7 * DAY, threshold: 0, minExecutions: 1, horizonDays: 0, afterMs: 3_600_000, scope: 'hook' },
  never_completed: { severity: 'warning', windowMs: 3_600_000, threshold: 0, minExecutions: 1, horizonDays: 0, afterMs: 300_000 },
  hook_limit: { severity: 'warning', windowMs: 3_600_000, threshold: 0, minExecutions: 1, horizonDays: 0, afterMs: 0 },
};

/** Rules on with zero configuration. `silence` and `persisted_ratio` need a team's knowledge of its traffic. */
export const DEFAULT_RULE_KINDS: readonly RuleKind[] = ['persisted', 'headroom', 'growth', 'blind', 'never_completed', 'hook_limit'];

const RULE_KEYS = ['name', 'kind', 'for', 'keepFiringFor', 'severity', 'window', 'groupBy', 'threshold', 'minExecutions', 'horizonDays', 'after', 'scope', 'labels'];
/**
 * The keys each kind reads besides name, kind, for, keepFiringFor, severity and labels. A key a kind does not
 * read is refused: `threshold: 0.5` on a persisted rule would otherwise look set and change nothing.
 */
const KIND_KEYS: Record<RuleKind, readonly string[]> = {
  persisted: ['window', 'groupBy'],
  persisted_ratio: ['window', 'groupBy', 'threshold', 'minExecutions'],
  headroom: ['window', 'groupBy', 'threshold'],
  growth: ['window', 'horizonDays'],
  blind: ['window'],
  silence: ['window', 'after', 'scope'],
  never_completed: ['window', 'groupBy', 'after'],
  hook_limit: ['window'],
};
/** Whether rules of `kind` take a groupBy (a dimension their alerts are split by). */
export function takesGroupBy(kind: RuleKind): boolean {
  return KIND_KEYS[kind].includes('groupBy');
}
const COMMON_RULE_KEYS = ['name', 'kind', 'for', 'keepFiringFor', 'severity', 'labels'];
/** Labels every rule sets itself (alertname, severity) or an alert of some kind carries; a rule's labels add to them. */
const BUILT_IN_LABELS = ['alertname', 'severity', 'hook_event', 'hook_name', 'service_name', 'service_version', 'scope'];
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]{0,63}$/;
const MAX_RULE_LABELS = 20;

/**
 * The label names the alerts of these rules can carry: those hookwatch sets (BUILT_IN_LABELS), the rules' own
 * labels and their groupBy labels. Not alerting.externalLabels: they are added only to what receivers are sent.
 */
export function alertLabelNames(rules: readonly Pick<RuleConfig, 'labels' | 'groupBy'>[]): string[] {
  const names = new Set(BUILT_IN_LABELS);
  for (const rule of rules) {
    for (const name of Object.keys(rule.labels)) names.add(name);
    if (rule.groupBy !== null) names.add(dimensionLabel(rule.groupBy));
  }
  return [...names];
}
const MAX_LABEL_VALUE = 256;

/** A rule's `labels`: a few identifier names (not a built-in label, nor its groupBy label) with short string values. */
function ruleLabels(raw: unknown, at: string, groupBy: string | null): Record<string, string> {
  if (raw === undefined || raw === null) return {};
  if (!isMap(raw)) throw new SettingError(`${at}.labels: expected a mapping of label names to values, e.g. { team: platform }`);
  const entries = Object.entries(raw);
  if (entries.length > MAX_RULE_LABELS) throw new SettingError(`${at}.labels: at most ${MAX_RULE_LABELS} labels`);
  const taken = groupBy === null ? BUILT_IN_LABELS : [...BUILT_IN_LABELS, dimensionLabel(groupBy)];
  const out: Record<string, string> = {};
  for (const [name, value] of entries) {
    if (!LABEL_NAME.test(name) || name.startsWith('__')) throw new SettingError(`${at}.labels: ${JSON.stringify(name)} is not a label name (letters, digits and _, starting with a letter or _, not __)`);
    if (taken.includes(name)) throw new SettingError(`${at}.labels.${name}: hookwatch sets this label itself${name === 'severity' ? ' (use severity:)' : ''}`);
    // A number or a boolean is written as text, as Prometheus does with `priority: 1`; from the file it arrives as
    // the file writes it (Setting.textValues: `2.10`, not `2.1`).
    const text = typeof value === 'number' || typeof value === 'boolean' ? String(value) : value;
    if (typeof text !== 'string' || text.length === 0 || text.length > MAX_LABEL_VALUE) throw new SettingError(`${at}.labels.${name}: expected a string of 1 to ${MAX_LABEL_VALUE} characters`);
    out[name] = text;
  }
  return out;
}
const MAX_EXTERNAL_LABELS = 20;

/**
 * `alerting.externalLabels`: a mapping of label names to values in the file, `name=value,name2=value2` in the
 * environment (values URL-decoded, as forward.headers). Names as Prometheus and Alertmanager take them, none a
 * label hookwatch sets itself (the rules' own labels and groupBy labels are checked in alertingConfig, beside the
 * rules); values of 1 to MAX_LABEL_VALUE characters.
 */
export function parseExternalLabels(raw: unknown): Record<string, string> {
  const key = 'alerting.externalLabels';
  if (raw === null || raw === undefined || raw === '') return {};
  let entries: [string, unknown][];
  if (typeof raw === 'string') {
    entries = [];
    const parts = raw.split(',');
    for (const [i, part] of parts.entries()) {
      if (!part.trim()) continue;
      const eq = part.indexOf('=');
      if (eq <= 0) throw new SettingError(`${key}: expected name=value pairs separated by commas (entry ${i + 1} of ${parts.length} has ${eq < 0 ? 'no "="' : 'no name before "="'})`);
      const name = part.slice(0, eq).trim();
      let value: string;
      try {
        value = decodeURIComponent(part.slice(eq + 1).trim());
      } catch {
        throw new SettingError(`${key}: the value of label ${JSON.stringify(name)} is not valid percent-encoding`);
      }
      entries.push([name, value]);
    }
  } else if (isMap(raw)) {
    entries = Object.entries(raw);
  } else {
    throw new SettingError(`${key}: expected a mapping of label names to values, e.g. { env: prod }, or env=prod,region=eu`);
  }
  if (entries.length > MAX_EXTERNAL_LABELS) throw new SettingError(`${key}: at most ${MAX_EXTERNAL_LABELS} labels`);
  const out: Record<string, string> = {};
  for (const [name, value] of entries) {
    if (!LABEL_NAME.test(name) || name.startsWith('__')) throw new SettingError(`${key}: ${quotedKey(name.slice(0, 100))} is not a label name (letters, digits and _, starting with a letter or _, not __)`);
    if (BUILT_IN_LABELS.includes(name)) throw new SettingError(`${key}.${name}: hookwatch sets this label itself on its alerts (it sets ${BUILT_IN_LABELS.join(', ')}); choose another name`);
    if (Object.hasOwn(out, name)) throw new SettingError(`${key}.${name}: given twice`);
    const text = typeof value === 'number' || typeof value === 'boolean' ? String(value) : value;
    if (typeof text !== 'string' || text.length === 0 || text.length > MAX_LABEL_VALUE) throw new SettingError(`${key}.${name}: expected a string of 1 to ${MAX_LABEL_VALUE} characters`);
    out[name] = text;
  }
  return out;
}

/**
 * An external label that a rule's alerts carry too (a rule's `labels`, its groupBy label) is refused: an external
 * label is the same on every alert this hookwatch sends, and one of the two values would silently be lost.
 */
function externalLabelsApart(external: Record<string, string>, rules: readonly RuleConfig[]): void {
  rules.forEach((rule, i) => {
    for (const name of Object.keys(external)) {
      const by = Object.hasOwn(rule.labels, name) ? `its labels.${name}` : rule.groupBy !== null && dimensionLabel(rule.groupBy) === name ? `its groupBy ${rule.groupBy}` : undefined;
      if (by) throw new SettingError(`alerting.externalLabels.${name}: alerting.rules[${i}] (${rule.name}) sets this label too (${by}); an external label is the same on every alert hookwatch sends: rename one of them`);
    }
  });
}

const NAME = /^[a-zA-Z_][a-zA-Z0-9_]{0,63}$/;
const MAX_RULES = 100;

function num(raw: unknown, key: string, min: number, max: number, integer = false): number {
  const v = readNumber(raw);
  if (v === undefined || !Number.isFinite(v) || (integer && !Number.isInteger(v))) throw new SettingError(`${key}: expected ${integer ? 'a whole number' : 'a number'}`);
  if (v < min || v > max) throw new SettingError(`${key}: must be between ${min} and ${max}`);
  return v;
}

/** A share from 0 to max; one written as a percentage (85) is refused with the share it stands for (0.85). */
function share(raw: unknown, key: string, max: number): number {
  const v = readNumber(raw);
  if (v !== undefined && v > max && v <= 100) throw new SettingError(`${key}: must be between 0 and ${max}, a share: ${+(v / 100).toPrecision(12)} for ${v}%`);
  return num(raw, key, 0, max);
}

/** Parses `alerting.rules` (null or absent: the default rules). */
export function parseRules(raw: unknown, knownDimensions?: readonly string[]): RuleConfig[] {
  if (raw === null || raw === undefined) return DEFAULT_RULE_KINDS.map((kind) => parseRule({ kind }, 0, knownDimensions));
  if (!Array.isArray(raw)) throw new SettingError('alerting.rules: expected a list of rules');
  if (raw.length > MAX_RULES) throw new SettingError(`alerting.rules: at most ${MAX_RULES} rules`);
  const rules = raw.map((r, i) => parseRule(r, i, knownDimensions));
  const seen = new Set<string>();
  rules.forEach((r, i) => {
    if (seen.has(r.name)) throw new SettingError(`alerting.rules[${i}].name: ${JSON.stringify(r.name)} is used by an earlier rule; names must be unique`);
    seen.add(r.name);
  });
  return rules;
}

/**
 * A rule list replaces the default rules, as a Prometheus rule file does: a list of three rules turns the other
 * default kinds off. Said at start, on each reload and by `hookwatch config`, with the items that keep them; none for
 * `rules: []` (rules off on purpose) or a list that has every default kind.
 */
export function defaultRulesOffWarning(rules: readonly RuleConfig[]): string | undefined {
  if (rules.length === 0) return undefined;
  const off = DEFAULT_RULE_KINDS.filter((kind) => !rules.some((r) => r.kind === kind));
  if (off.length === 0) return undefined;
  const named = off.length === 1 ? off[0] : `${off.slice(0, -1).join(', ')} and ${off.at(-1)}`;
  return `alerting.rules lists rules, which replace the default ones: the default ${off.length === 1 ? 'rule' : 'rules'} ${named} ${off.length === 1 ? 'is' : 'are'} off; to keep ${off.length === 1 ? 'it' : 'them'}, add ${off.length === 1 ? 'it as an item' : 'each as an item'} of alerting.rules: ${off.map((k) => `{ kind: ${k} }`).join(', ')}`;
}

function parseRule(raw: unknown, i: number, knownDimensions?: readonly string[]): RuleConfig {
  const at = `alerting.rules[${i}]`;
  if (!isMap(raw)) throw new SettingError(`${at}: expected a mapping with at least "kind"`);
  for (const k of Object.keys(raw)) {
    if (!RULE_KEYS.includes(k)) throw new SettingError(`${at}: unknown key ${quotedKey(k)} (known: ${RULE_KEYS.join(', ')})`);
  }
  const kind = raw['kind'];
  if (typeof kind !== 'string' || !(RULE_KINDS as readonly string[]).includes(kind)) {
    throw new SettingError(`${at}.kind: expected one of ${RULE_KINDS.join(', ')}`);
  }
  const k = kind as RuleKind;
  const d = KIND_DEFAULTS[k];
  for (const key of Object.keys(raw)) {
    // groupBy has its own message below.
    if (COMMON_RULE_KEYS.includes(key) || KIND_KEYS[k].includes(key) || key === 'groupBy') continue;
    const kinds = RULE_KINDS.filter((x) => KIND_KEYS[x].includes(key));
    throw new SettingError(`${at}.${key}: not used by kind ${k} (only by ${kinds.join(', ')})`);
  }
  const name = raw['name'] ?? k;
  if (typeof name !== 'string' || !NAME.test(name)) throw new SettingError(`${at}.name: expected letters, digits and _ (at most 64), starting with a letter or _`);
  const severity = raw['severity'] ?? d.severity;
  if (typeof severity !== 'string' || !/^[a-z]{1,20}$/.test(severity)) throw new SettingError(`${at}.severity: expected a lowercase word such as critical, warning or info`);
  const groupBy = raw['groupBy'] ?? null;
  if (groupBy !== null) {
    if (typeof groupBy !== 'string' || groupBy.length === 0) throw new SettingError(`${at}.groupBy: expected a dimension name such as team`);
    if (!takesGroupBy(k)) throw new SettingError(`${at}.groupBy: not supported for kind ${k}`);
    if (knownDimensions && !knownDimensions.includes(groupBy)) throw new SettingError(`${at}.groupBy: unknown dimension ${JSON.stringify(groupBy)}; known: ${knownDimensions.join(', ')} (add it to dimensions)`);
  }
  const scope = raw['scope'] ?? d.scope ?? 'hook';
  if (scope !== 'hook' && scope !== 'feed') throw new SettingError(`${at}.scope: expected hook or feed`);
  // A feed goes quiet as a whole: no hook has to have been active within a window.
  if (scope === 'feed' && raw['window'] !== undefined) throw new SettingError(`${at}.window: not used with scope feed (it alerts on no event at all for after)`);
  const thresholdMax = 1;
  const rule: RuleConfig = {
    name,
    kind: k,
    forMs: raw['for'] === undefined ? (DEFAULT_FOR_MS[k] ?? 0) : duration(raw['for'], `${at}.for`, 0, 30 * DAY),
    keepFiringForMs: raw['keepFiringFor'] === undefined ? 0 : duration(raw['keepFiringFor'], `${at}.keepFiringFor`, 0, 30 * DAY),
    severity,
    windowMs: raw['window'] === undefined ? d.windowMs : duration(raw['window'], `${at}.window`, 1000, 400 * DAY),
    groupBy: groupBy as string | null,
    threshold: raw['threshold'] === undefined ? d.threshold : share(raw['threshold'], `${at}.threshold`, thresholdMax),
    minExecutions: raw['minExecutions'] === undefined ? d.minExecutions : num(raw['minExecutions'], `${at}.minExecutions`, 1, 1e9, true),
    horizonDays: raw['horizonDays'] === undefined ? d.horizonDays : num(raw['horizonDays'], `${at}.horizonDays`, 1, 365),
    afterMs: raw['after'] === undefined ? d.afterMs : duration(raw['after'], `${at}.after`, 100, 30 * DAY),
    scope,
    labels: ruleLabels(raw['labels'], at, groupBy as string | null),
  };
  // A hook counts as active when it sent something within window: quiet for `after` >= window, it has left the
  // window before it could alert, and the rule would never fire.
  if (k === 'silence' && scope === 'hook' && rule.afterMs >= rule.windowMs) {
    const shown = (key: string, ms: number): string => (raw[key] === undefined ? `${ms % DAY === 0 ? `${ms / DAY}d` : formatDuration(ms)} (the default)` : String(raw[key]));
    throw new SettingError(`${at} (${name}): after ${shown('after', rule.afterMs)} is not shorter than window ${shown('window', rule.windowMs)}: a hook counts as active when it sent within window, so none could be quiet for after and the rule would never fire; shorten after or lengthen window`);
  }
  return rule;
}

export const ALERTING_SETTINGS: readonly Setting[] = [
  {
    key: 'alerting.rules', type: 'object', default: null, textValues: '[].labels.*', validate: validator((v) => parseRules(v)), reloadable: true,
    description: 'Alert rules (file only): a list of {kind, name, for, keepFiringFor, window, groupBy, threshold, minExecutions, horizonDays, after, scope, severity, labels}. Kinds: persisted, persisted_ratio, headroom, growth, blind, silence, never_completed, hook_limit. Unset: persisted, headroom, growth, blind, never_completed and hook_limit with their defaults; a list replaces them (a default kind it leaves out is off, and a warning at start and on a reload names it); [] turns alerting rules off.',
  },
  RECEIVERS_SETTING,
  {
    key: 'alerting.externalLabels', env: 'HOOKWATCH_ALERT_EXTERNAL_LABELS', type: 'object', default: {}, textValues: '*', validate: validator(parseExternalLabels), reloadable: true,
    description: 'Labels added to every alert hookwatch pushes to an Alertmanager (`type: alertmanager`) and to the webhook body (`type: webhook`: each alert\'s labels and fingerprint, commonLabels, groupLabels and so groupKey), as Prometheus\' `global.external_labels`, e.g. `{ env: prod }`: two hookwatch deployments (prod and staging, two business units) sending to one Alertmanager then keep their alerts apart, where alerts of the same labels would be merged into one and one deployment\'s resolution would end the other\'s alert. A mapping in the file; `name=value,name2=value2` in the environment (values URL-decoded). Names are label names (letters, digits and _, starting with a letter or _, not __), at most 20, values 1 to 256 characters; a value written as a number or a boolean in the file is taken as written there (`version: 1.10` is "1.10", not "1.1"), as Prometheus reads it, and so are a rule\'s labels. A name hookwatch sets itself (alertname, severity, hook_event, hook_name, service_name, service_version, scope) is refused, as is one a rule sets too (its labels, its groupBy label), at start and by a reload: an alert never carries two values of one label. hookwatch\'s own API, dashboard and silences see the alerts without them (a silence in hookwatch, and the `silence_url` link to its form, match the labels hookwatch sets); an Alertmanager silence may match them. Slack messages and alert events (alerting.otlp.endpoint) do not carry them.',
  },
  {
    key: 'alerting.evaluationInterval', env: 'HOOKWATCH_ALERT_EVALUATION_INTERVAL', type: 'duration', default: 10_000, min: 50, max: 600_000, reloadable: true,
    description: 'How often every alert rule is evaluated for time-based transitions (for, keepFiringFor, repeats, silence, growth). Persisted outputs are evaluated on ingest, not on this timer.',
  },
  {
    key: 'alerting.repeatInterval', env: 'HOOKWATCH_ALERT_REPEAT_INTERVAL', type: 'duration', default: 4 * 3_600_000, min: 1000, max: 30 * DAY, reloadable: true,
    description: 'A still-firing alert is notified again after this long (Alertmanager repeat_interval).',
  },
  ...DELIVERY_SETTINGS,
];

/**
 * A `silence` rule (scope hook) raises its alert at a timed evaluation that finds the hook quiet for `after` and still
 * active within `window`: a stretch of window - after, which the timer, evaluationInterval apart, must not step
 * over, or the hook leaves the window unseen and the rule never fires on it. Once raised, the alert is kept past the
 * window (rules.ts), so only this first evaluation has to fall inside it.
 */
function quietHooksSeen(rules: readonly RuleConfig[], evaluationIntervalMs: number): void {
  rules.forEach((rule, i) => {
    if (rule.kind !== 'silence' || rule.scope !== 'hook' || rule.afterMs + evaluationIntervalMs <= rule.windowMs) return;
    throw new SettingError(`alerting.rules[${i}] (${rule.name}): after ${formatDuration(rule.afterMs)} plus alerting.evaluationInterval ${formatDuration(evaluationIntervalMs)} is more than window ${formatDuration(rule.windowMs)}: a hook counts as active when it sent within window, and a quiet one can leave it between two evaluations before any finds it quiet for after; shorten after or evaluationInterval, or lengthen window`);
  });
}

/** Typed `alerting.*` settings: rules and receivers parsed, durations in ms. */
export interface AlertingConfig extends NotifyConfig {
  rules: RuleConfig[];
  /** alerting.externalLabels: added to every alert pushed to an Alertmanager and to the webhook body's alerts. */
  externalLabels: Record<string, string>;
  evaluationIntervalMs: number;
  repeatIntervalMs: number;
}

/** `dimensions`: every dimension name a rule's groupBy may use, so rules are checked against them here, once. */
export function alertingConfig(r: SettingValues, dimensions: readonly string[]): { alerting: AlertingConfig } {
  try {
    const rules = parseRules(r.raw('alerting.rules'), dimensions);
    const evaluationIntervalMs = r.number('alerting.evaluationInterval');
    quietHooksSeen(rules, evaluationIntervalMs);
    const externalLabels = parseExternalLabels(r.raw('alerting.externalLabels'));
    externalLabelsApart(externalLabels, rules);
    return {
      alerting: {
        rules,
        externalLabels,
        evaluationIntervalMs,
        repeatIntervalMs: r.number('alerting.repeatInterval'),
        ...notifyConfig(r),
      },
    };
  } catch (err) {
    if (err instanceof SettingError) throw new ConfigError(`configuration: ${err.message}`);
    throw err;
  }
}
