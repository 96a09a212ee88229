/**
 * One evaluation's decisions, with no I/O: what each rule's query returned (label sets whose condition holds, or
 * an error) goes in; which alerts go pending, fire, resolve or are forgotten comes out. The engine runs the
 * queries (rules.ts) before and persists and notifies after; lifecycle.ts steps each rule.
 */
import type { AlertSet } from './alert-set.ts';
import { fingerprint, stepRule, type RuleStep, type Transition } from './lifecycle.ts';
import type { AlertRecord } from './model.ts';
import type { Candidate } from './rules.ts';

/** Most alerts one rule may hold: label cardinality is bounded; the rest is dropped and counted. */
export const MAX_ALERTS_PER_RULE = 500;

type RuleTiming = Parameters<typeof stepRule>[0];

/** What one rule's query gave: the label sets whose condition holds, or why it could not say. */
export type RuleOutcome = { rule: RuleTiming; candidates: readonly Candidate[] } | { rule: RuleTiming; error: unknown };

export interface EvaluationOptions {
  now: number;
  /**
   * A full evaluation (the timer's): alerts of rules no longer configured resolve, and resolved alerts older
   * than the retention are forgotten. Ingest evaluations only step the rules they ran.
   */
  sweep: boolean;
  /** Names of the configured rules (with sweep). */
  configured: readonly string[];
  /** How long resolved alerts stay listed (with sweep). */
  resolvedRetentionMs: number;
  /**
   * Whether an alert superseding the headroom and growth alerts of a hook fires (a `persisted` one:
   * notification-plan.ts supersedes), asked of the hooks over the cap (Candidate.overCap) once the rules without
   * any are stepped. Without it none does: their alerts are held.
   */
  superseded?: (hookId: string) => boolean;
}

export interface EvaluationStep {
  /** Records created or changed. */
  upsert: AlertRecord[];
  /** Ids of records to forget: pending alerts that cleared, resolved ones past retention. */
  remove: string[];
  transitions: Transition[];
  /** Rules whose query failed: unknown is not "clear", so their alerts kept their state. */
  failed: { rule: string; error: unknown }[];
  /** Rules over MAX_ALERTS_PER_RULE, with how many label sets each dropped. */
  overLimit: { rule: string; dropped: number }[];
}

/** Applies one evaluation's rule outcomes to `alerts` (mutated to the new state) and says what changed. */
export function applyEvaluation(alerts: AlertSet, outcomes: readonly RuleOutcome[], opts: EvaluationOptions): EvaluationStep {
  const { now } = opts;
  const step: EvaluationStep = { upsert: [], remove: [], transitions: [], failed: [], overLimit: [] };
  const apply = (s: RuleStep): void => {
    step.upsert.push(...s.upsert);
    step.remove.push(...s.remove);
    step.transitions.push(...s.transitions);
    for (const t of s.transitions) if (t.to === 'resolved') alerts.addResolved(t.alert);
  };
  // Rules with label sets of hooks over the cap come last: whether those resolve (as superseded) or are held
  // depends on the persisted alerts this very evaluation may fire.
  const overCap = (o: RuleOutcome): boolean => 'candidates' in o && o.candidates.some((c) => c.overCap);
  for (const outcome of [...outcomes.filter((o) => !overCap(o)), ...outcomes.filter(overCap)]) {
    if ('error' in outcome) {
      step.failed.push({ rule: outcome.rule.name, error: outcome.error });
      continue;
    }
    // Over the cap: absent once an alert superseding them fires on the hook, held until then.
    const all = outcome.candidates.flatMap((c): Candidate[] => (!c.overCap ? [c] : c.hookId !== null && opts.superseded?.(c.hookId) ? [] : [{ ...c, held: true }]));
    // Held and ended label sets raise no alert: they count against no limit, and keep (or end) the active alerts
    // they name.
    const aside = (c: Candidate): boolean => c.held === true || c.ended === true;
    let candidates = all.filter((c) => !aside(c));
    if (candidates.length > MAX_ALERTS_PER_RULE) {
      step.overLimit.push({ rule: outcome.rule.name, dropped: candidates.length - MAX_ALERTS_PER_RULE });
      // The label sets of active alerts first: past the limit an alert already raised stays, rather than resolve as
      // if its condition cleared (and never be raised again where only its alert kept the label set read, as a
      // quiet hook's past its window) while a new one takes its place.
      const active = alerts.activeOf(outcome.rule.name);
      const kept = (c: Candidate): boolean => active.has(fingerprint(c.labels));
      candidates = [...candidates.filter(kept), ...candidates.filter((c) => !kept(c))].slice(0, MAX_ALERTS_PER_RULE);
    }
    if (candidates.length < all.length) candidates = [...candidates, ...all.filter(aside)];
    apply(stepRule(outcome.rule, alerts.activeOf(outcome.rule.name), candidates, now));
  }
  if (opts.sweep) {
    // Alerts of rules no longer configured resolve instead of firing forever.
    for (const name of alerts.activeRules()) {
      if (!opts.configured.includes(name)) apply(stepRule({ name, forMs: 0, keepFiringForMs: 0 }, alerts.activeOf(name), [], now));
    }
    step.remove.push(...alerts.forgetResolvedBefore(now - opts.resolvedRetentionMs, now));
  }
  return step;
}
