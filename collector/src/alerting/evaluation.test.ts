/** The evaluation step alone: rule outcomes in, transitions and the state to write out; no store, no clock. */
import { describe, expect, it, vi } from 'vitest';
import { alertRecord } from '../../test/support/alerting.ts';
import { AlertSet } from './alert-set.ts';
import { applyEvaluation, MAX_ALERTS_PER_RULE, type EvaluationOptions } from './evaluation.ts';
import type { Candidate } from './rules.ts';

const NOW = 1_000_000;
const rule = { name: 'persisted', forMs: 0, keepFiringForMs: 0 };
const opts = (over: Partial<EvaluationOptions> = {}): EvaluationOptions => ({ now: NOW, sweep: false, configured: ['persisted'], resolvedRetentionMs: 60_000, ...over });
const candidate = (hook: string): Candidate => ({ labels: { alertname: 'persisted', hook_name: hook }, annotations: { summary: hook }, hookId: hook });

describe('applyEvaluation', () => {
  it('fires a label set whose condition holds (for: 0) and resolves it when the condition is gone', () => {
    const set = new AlertSet();
    const first = applyEvaluation(set, [{ rule, candidates: [candidate('a')] }], opts());
    expect(first.transitions.map((t) => `${t.from}->${t.to}`)).toEqual(['null->pending', 'pending->firing']);
    expect(first.upsert).toEqual([expect.objectContaining({ state: 'firing', startsAtMs: NOW, labels: { alertname: 'persisted', hook_name: 'a' } })]);
    const second = applyEvaluation(set, [{ rule, candidates: [] }], opts({ now: NOW + 1 }));
    expect(second.transitions.map((t) => `${t.from}->${t.to}`)).toEqual(['firing->resolved']);
    expect(set.activeAlerts()).toEqual([]);
    expect(set.resolvedAlerts()).toEqual([expect.objectContaining({ state: 'resolved', endsAtMs: NOW + 1 })]);
  });

  it('keeps the alerts of a rule whose query failed as they were, and names the rule', () => {
    const set = new AlertSet();
    set.replace([alertRecord({ id: 'x', state: 'firing' })]);
    const step = applyEvaluation(set, [{ rule, error: new Error('database is locked') }], opts());
    expect(step.failed).toEqual([{ rule: 'persisted', error: new Error('database is locked') }]);
    expect(step.transitions).toEqual([]);
    expect(set.activeAlerts().map((a) => [a.id, a.state])).toEqual([['x', 'firing']]);
  });

  it(`holds at most ${MAX_ALERTS_PER_RULE} alerts per rule and counts the label sets it dropped`, () => {
    const set = new AlertSet();
    const many = Array.from({ length: MAX_ALERTS_PER_RULE + 7 }, (_, i) => candidate(`h${i}`));
    const step = applyEvaluation(set, [{ rule, candidates: many }], opts());
    expect(step.overLimit).toEqual([{ rule: 'persisted', dropped: 7 }]);
    expect(set.activeAlerts()).toHaveLength(MAX_ALERTS_PER_RULE);
    expect(set.activeAlerts().some((a) => a.labels['hook_name'] === `h${MAX_ALERTS_PER_RULE}`)).toBe(false);
  });

  it(`over ${MAX_ALERTS_PER_RULE} label sets, keeps those of the rule's active alerts before raising new ones`, () => {
    const set = new AlertSet();
    // Active alerts whose label sets a rule gives last (a quiet hook's, past its window).
    applyEvaluation(set, [{ rule, candidates: [candidate('old1'), candidate('old2')] }], opts({ now: NOW - 60_000 }));
    const many = Array.from({ length: MAX_ALERTS_PER_RULE }, (_, i) => candidate(`h${i}`));
    const step = applyEvaluation(set, [{ rule, candidates: [...many, candidate('old1'), candidate('old2')] }], opts());
    expect(step.overLimit).toEqual([{ rule: 'persisted', dropped: 2 }]);
    expect(step.transitions.filter((t) => t.to === 'resolved')).toEqual([]);
    const hooks = set.activeAlerts().map((a) => a.labels['hook_name']);
    expect(hooks).toHaveLength(MAX_ALERTS_PER_RULE);
    expect(hooks).toEqual(expect.arrayContaining(['old1', 'old2']));
    expect(hooks.filter((h) => h === `h${MAX_ALERTS_PER_RULE - 1}` || h === `h${MAX_ALERTS_PER_RULE - 2}`)).toEqual([]);
  });

  it('keeps the alerts a held label set names, pending or firing, as they were; raises none; counts none against the limit', () => {
    const set = new AlertSet();
    const slow = { ...rule, forMs: 60_000 };
    applyEvaluation(set, [{ rule: slow, candidates: [candidate('firing')] }], opts({ now: NOW - 60_000 }));
    applyEvaluation(set, [{ rule: slow, candidates: [candidate('firing'), candidate('pending')] }], opts());
    const held = (hook: string): Candidate => ({ ...candidate(hook), annotations: {}, held: true });
    const many = Array.from({ length: MAX_ALERTS_PER_RULE }, (_, i) => candidate(`h${i}`));
    // Past `for`: the pending alert would fire, had its condition held.
    const step = applyEvaluation(set, [{ rule: slow, candidates: [...many, held('firing'), held('pending'), held('new')] }], opts({ now: NOW + 60_000 }));
    expect(step.overLimit).toEqual([]);
    expect(step.transitions.filter((t) => !t.alert.labels['hook_name']?.startsWith('h'))).toEqual([]);
    const state = (hook: string): [string, Record<string, string>] | undefined => set.activeAlerts().filter((a) => a.labels['hook_name'] === hook).map((a) => [a.state, a.annotations] as [string, Record<string, string>])[0];
    expect([state('firing'), state('pending'), state('new')]).toEqual([['firing', { summary: 'firing' }], ['pending', { summary: 'pending' }], undefined]);
  });

  it('holds the alerts of hooks over the cap until an alert superseding them fires, stepped after the other rules', () => {
    const set = new AlertSet();
    const headroom = { ...rule, name: 'headroom' };
    const slow = { ...rule, forMs: 60_000 };
    const near = (hook: string): Candidate => ({ ...candidate(hook), labels: { alertname: 'headroom', hook_name: hook } });
    applyEvaluation(set, [{ rule: headroom, candidates: [near('a'), near('b')] }], opts({ now: NOW - 60_000 }));
    const overCap = (hook: string): Candidate => ({ ...near(hook), annotations: {}, overCap: true });
    // The persisted alert of `a` goes pending: its headroom alert is held, not resolved; `b`'s condition cleared.
    const superseded = (hookId: string): boolean => set.activeAlerts().some((a) => a.rule === 'persisted' && a.state === 'firing' && a.hookId === hookId);
    const held = applyEvaluation(set, [{ rule: headroom, candidates: [overCap('a'), overCap('new')] }, { rule: slow, candidates: [candidate('a')] }], opts({ now: NOW - 30_000, superseded }));
    expect(held.transitions.map((t) => `${t.alert.rule} ${t.alert.hookId} ${t.from}->${t.to}`)).toEqual(['persisted a null->pending', 'headroom b firing->resolved']);
    expect(set.activeAlerts().map((a) => `${a.rule} ${a.hookId} ${a.state}`).sort()).toEqual(['headroom a firing', 'persisted a pending']);
    // The persisted alert fires in this very evaluation, read after the headroom rule: the headroom alert resolves.
    const resolved = applyEvaluation(set, [{ rule: headroom, candidates: [overCap('a')] }, { rule: slow, candidates: [candidate('a')] }], opts({ now: NOW + 30_000, superseded }));
    expect(resolved.transitions.map((t) => `${t.alert.rule} ${t.alert.hookId} ${t.from}->${t.to}`)).toEqual(['persisted a pending->firing', 'headroom a firing->resolved']);
    // Without the question, nothing supersedes: held.
    applyEvaluation(set, [{ rule: headroom, candidates: [near('c')] }], opts({ now: NOW + 40_000 }));
    expect(applyEvaluation(set, [{ rule: headroom, candidates: [overCap('c')] }], opts({ now: NOW + 50_000 })).transitions).toEqual([]);
  });

  it('resolves the alerts of a rule no longer configured on a full evaluation only', () => {
    const set = new AlertSet();
    set.replace([alertRecord({ id: 'old', rule: 'removed_rule', state: 'firing' })]);
    expect(applyEvaluation(set, [], opts()).transitions).toEqual([]);
    const step = applyEvaluation(set, [], opts({ sweep: true }));
    expect(step.transitions.map((t) => [t.alert.id, t.to])).toEqual([['old', 'resolved']]);
    expect(step.upsert.map((a) => a.id)).toEqual(['old']);
  });

  it('forgets resolved alerts past the retention on a full evaluation, and only those', () => {
    const set = new AlertSet();
    set.replace([
      alertRecord({ id: 'stale', state: 'resolved', endsAtMs: NOW - 60_001 }),
      alertRecord({ id: 'recent', state: 'resolved', endsAtMs: NOW - 59_999 }),
    ]);
    expect(applyEvaluation(set, [], opts()).remove).toEqual([]);
    expect(applyEvaluation(set, [], opts({ sweep: true })).remove).toEqual(['stale']);
    expect(set.resolvedAlerts().map((a) => a.id)).toEqual(['recent']);
  });

  it('finds each alert by id as the evaluations add, fire, drop and resolve them, without listing every active alert', () => {
    const set = new AlertSet();
    set.replace([alertRecord({ id: 'loaded', rule: 'removed_rule', state: 'firing' }), alertRecord({ id: 'gone', state: 'resolved', endsAtMs: NOW - 60_001 })]);
    const pending = { ...rule, name: 'headroom', forMs: 60_000 };
    const first = applyEvaluation(set, [{ rule, candidates: [candidate('a'), candidate('b')] }, { rule: pending, candidates: [candidate('c')] }], opts({ configured: ['persisted', 'headroom'] }));
    const ids = Object.fromEntries(first.upsert.map((a) => [a.labels['hook_name'] ?? a.id, a.id]));
    const lists = vi.spyOn(set, 'activeAlerts');
    expect([ids['a'], ids['b'], ids['c'], 'loaded', 'gone'].map((id) => set.get(id ?? '')?.state)).toEqual(['firing', 'firing', 'pending', 'firing', 'resolved']);
    // b resolves, c (pending) is dropped, the loaded alert's rule is gone; a fires on.
    const second = applyEvaluation(set, [{ rule, candidates: [candidate('a')] }, { rule: pending, candidates: [] }], opts({ now: NOW + 1, sweep: true, configured: ['persisted', 'headroom'] }));
    expect(second.remove).toEqual([ids['c'], 'gone']);
    expect([ids['a'], ids['b'], ids['c'], 'loaded', 'gone'].map((id) => set.get(id ?? '')?.state)).toEqual(['firing', 'resolved', undefined, 'resolved', undefined]);
    // A load replaces everything.
    set.replace([alertRecord({ id: 'reloaded', state: 'pending' })]);
    expect([ids['a'], 'loaded', 'reloaded'].map((id) => set.get(id ?? '')?.state)).toEqual([undefined, undefined, 'pending']);
    expect(lists).not.toHaveBeenCalled();
  });
});
