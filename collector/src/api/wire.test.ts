/** The mapping from the store's figures to the API's JSON: every field where the wire expects it, nothing extra. */
import { describe, expect, it } from 'vitest';
import type { HookCounters, TranscriptCommandRow } from '../store/model.ts';
import type { HookInfo } from '../store/store.ts';
import { breakdownRow, clientVersion, clusterResponse, hookSummary, seriesBucket, transcriptCommand, wireCounters } from './wire.ts';

/** A distinct value in every field, so a field mapped from the wrong source shows. */
const counters: HookCounters = {
  executions: 10, starts: 11, numHooks: 12, success: 13, blocking: 14, nonBlockingError: 15, cancelled: 16,
  outputsPersisted: 17, executionsWithPersisted: 18, sizeUnknownExecutions: 19, nearExecutions: 20, sizesMaySumExecutions: 23, durationMsSum: 21, durationMsMax: 22,
  maxChars: { stdout: 12_000, additionalContext: 31, systemMessage: null, initialUserMessage: 32 },
  maxCharsLowerBound: { stdout: 6_000, additionalContext: 41, systemMessage: null, initialUserMessage: 42 },
  sumChars: { stdout: 50_000, additionalContext: 51, systemMessage: null, initialUserMessage: 52 },
};

const info: HookInfo = { id: '0123456789abcdef', hookEvent: 'SessionStart', hookName: 'SessionStart:startup', firstSeenMs: Date.parse('2026-11-28T10:00:00Z'), lastSeenMs: Date.parse('2026-11-30T10:00:30Z') };

describe('wire mapping', () => {
  it('copies every counter to its own wire field, sizes by value', () => {
    const out = wireCounters(counters);
    expect(out).toStrictEqual(counters);
    expect(out.maxChars).not.toBe(counters.maxChars);
  });

  it('keeps what the store carries alongside the counters (a hook\'s info) off the wire', () => {
    const summary = hookSummary(info, { ...counters, info } as HookCounters);
    expect(summary).not.toHaveProperty('info');
    expect(Object.keys(wireCounters({ ...counters, info, hookId: 'x' } as HookCounters)).sort()).toEqual(Object.keys(counters).sort());
    const row = { command: 'a.sh', runs: 1, outputs: 2, delivered: 3, persisted: 4, unconfirmed: 5, largestOutputChars: 6, largestDeliveredChars: null, sessions: 7 };
    expect(transcriptCommand({ ...row, hookId: info.id } as TranscriptCommandRow)).toStrictEqual(row);
  });

  it('derives a hook summary\'s status, headroom and RFC 3339 times', () => {
    expect(hookSummary(info, counters)).toMatchObject({
      id: info.id, hookEvent: 'SessionStart', hookName: 'SessionStart:startup', executions: 10,
      status: 'over', headroom: 10_000 - 12_000, firstSeen: '2026-11-28T10:00:00.000Z', lastSeen: '2026-11-30T10:00:30.000Z',
    });
    const unknown = { ...counters, outputsPersisted: 0, executionsWithPersisted: 0, maxChars: { stdout: null, additionalContext: null, systemMessage: null, initialUserMessage: null } };
    expect(hookSummary(info, unknown)).toMatchObject({ status: 'unknown', headroom: null });
    // Measured executions all fine, some not measured at all: not healthy, unknown.
    const measured = { ...counters, executions: 10, outputsPersisted: 0, executionsWithPersisted: 0, nearExecutions: 0 };
    expect(hookSummary(info, { ...measured, sizeUnknownExecutions: 0 }).status).toBe('ok');
    expect(hookSummary(info, { ...measured, sizeUnknownExecutions: 2 }).status).toBe('unknown');
    expect(hookSummary(info, { ...measured, sizeUnknownExecutions: 2, nearExecutions: 1 }).status).toBe('near');
  });

  it('gives an empty series bucket no status, and a breakdown row its status', () => {
    const start = Date.parse('2026-11-30T00:00:00Z');
    expect(seriesBucket(start, start + 3_600_000, counters)).toMatchObject({ start: '2026-11-30T00:00:00.000Z', end: '2026-11-30T01:00:00.000Z', executions: 10, status: 'over' });
    expect(seriesBucket(start, start + 3_600_000, { ...counters, executions: 0 }).status).toBeNull();
    expect(breakdownRow({ ...counters, value: 'alice' })).toStrictEqual({ value: 'alice', ...counters, status: 'over' });
  });

  it('maps a client version field by field', () => {
    const v = { serviceName: 'claude-code', version: '2.1.279', executions: 3, sizeUnknownExecutions: 3, hasSizeData: false };
    expect(clientVersion(v)).toStrictEqual(v);
  });

  it('gives the cluster\'s times as RFC 3339, and a single process\'s lease expiry as empty', () => {
    const replica = { replica: 'h:1:r', leader: true, self: true, startedAtMs: Date.parse('2026-11-30T09:00:00Z'), lastHeartbeatMs: Date.parse('2026-11-30T10:00:00.250Z'), heartbeatAgeSeconds: 0.5, alive: true };
    const pg = clusterResponse({ backend: 'postgres', self: 'h:1:r', leader: { replica: 'h:1:r', epoch: 7, expiresAtMs: Date.parse('2026-11-30T10:00:15Z') }, leaseTtlSeconds: 15, replicas: [replica] });
    expect(pg).toStrictEqual({
      backend: 'postgres', self: 'h:1:r', leader: { replica: 'h:1:r', epoch: 7, expiresAt: '2026-11-30T10:00:15.000Z' }, leaseTtlSeconds: 15,
      replicas: [{ replica: 'h:1:r', leader: true, self: true, startedAt: '2026-11-30T09:00:00.000Z', lastHeartbeat: '2026-11-30T10:00:00.250Z', heartbeatAgeSeconds: 0.5, alive: true }],
    });
    expect(clusterResponse({ backend: 'sqlite', self: 'h:1', leader: { replica: 'h:1', epoch: 0, expiresAtMs: null }, leaseTtlSeconds: null, replicas: [] }).leader).toStrictEqual({ replica: 'h:1', epoch: 0, expiresAt: '' });
    expect(clusterResponse({ backend: 'postgres', self: 'h:1', leader: null, leaseTtlSeconds: 15, replicas: [] }).leader).toBeNull();
  });
});
