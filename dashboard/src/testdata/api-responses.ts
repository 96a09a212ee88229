/**
 * API responses for the dashboard's unit tests, typed by shared/src/api.ts so they keep the wire shape, with
 * the values a hookwatch fed Claude Code 2.1.332 telemetry answers (hook ids are 16 hex digits, times RFC 3339).
 */
import type {
  AlertSummary, FleetSeriesHook, FleetSeriesResponse, FleetSeriesRest, HookCounters, HookSummary, OverviewResponse, SeriesBucket, SeriesResponse,
} from '../../../shared/src/api.ts';

export const NOW = Date.parse('2026-11-30T08:30:00Z');

export function counters(over: Partial<HookCounters> = {}): HookCounters {
  return {
    executions: 12, starts: 12, numHooks: 12, success: 12, blocking: 0, nonBlockingError: 0, cancelled: 0,
    outputsPersisted: 0, executionsWithPersisted: 0, sizeUnknownExecutions: 0, nearExecutions: 0, sizesMaySumExecutions: 0,
    maxChars: { additionalContext: 4_200, stdout: 310, systemMessage: null, initialUserMessage: null },
    maxCharsLowerBound: { additionalContext: 4_200, stdout: 310, systemMessage: null, initialUserMessage: null },
    sumChars: { additionalContext: 40_000, stdout: 3_000, systemMessage: null, initialUserMessage: null },
    durationMsSum: 1_440, durationMsMax: 220,
    ...over,
  };
}

/** A hook as GET /api/v1/hooks lists it. */
export function hook(id: string, hookName: string, over: Partial<HookSummary> = {}): HookSummary {
  return {
    ...counters(),
    id, hookEvent: hookName.split(':')[0] ?? 'PostToolUse', hookName,
    status: 'ok', headroom: 5_800,
    firstSeen: '2026-11-29T09:00:00.000Z', lastSeen: '2026-11-30T08:27:00.000Z',
    ...over,
  };
}

/** Over the cap: 10,500 characters of stdout, one output persisted. */
export const OVER = hook('a1b2c3d4e5f60718', 'Stop:lint-report', {
  status: 'over', headroom: -500, outputsPersisted: 1, executionsWithPersisted: 1,
  maxChars: { additionalContext: 0, stdout: 10_500, systemMessage: null, initialUserMessage: null },
  maxCharsLowerBound: { additionalContext: 0, stdout: 10_500, systemMessage: null, initialUserMessage: null },
});
/** Near the cap. */
export const NEAR = hook('0f1e2d3c4b5a6978', 'SessionStart:startup', {
  status: 'near', headroom: 900, nearExecutions: 3,
  maxChars: { additionalContext: 9_100, stdout: 40, systemMessage: null, initialUserMessage: null },
});
/** Healthy. */
export const OK = hook('1111222233334444', 'PostToolUse:format', {});
/** 16 of 33 executions measured: not known to be healthy, so the API says unknown. */
export const PARTIAL = hook('5555666677778888', 'PostToolUse:partial-sizes', {
  status: 'unknown', headroom: 9_600, executions: 33, numHooks: 33, success: 33, sizeUnknownExecutions: 17,
  maxChars: { additionalContext: 300, stdout: 400, systemMessage: null, initialUserMessage: null },
});
/** Only old clients: no size data at all. */
export const BLIND = hook('9999aaaabbbbcccc', 'UserPromptSubmit:context', {
  status: 'unknown', headroom: null, sizeUnknownExecutions: 12,
  maxChars: { additionalContext: null, stdout: null, systemMessage: null, initialUserMessage: null },
});

export function overview(over: Partial<OverviewResponse> = {}): OverviewResponse {
  return {
    from: '2026-11-29T08:30:00.000Z', to: '2026-11-30T08:30:00.000Z',
    totals: counters({ executions: 81, numHooks: 81, success: 80, outputsPersisted: 1, executionsWithPersisted: 1, sizeUnknownExecutions: 29 }),
    hooks: 5, statusCounts: { over: 1, near: 1, ok: 2, unknown: 1 }, persisted: 1, measuredOnly: 0, sizeDataShare: 52 / 81,
    clientVersions: [
      { serviceName: 'claude-code', version: '2.1.332', executions: 52, sizeUnknownExecutions: 0, hasSizeData: true },
      { serviceName: 'claude-code', version: '2.1.250', executions: 29, sizeUnknownExecutions: 29, hasSizeData: false },
    ],
    lastEventAt: '2026-11-30T08:27:00.000Z', otlpHttpPort: 4318,
    ...over,
  };
}

export function fleetHook(h: HookSummary, largest: (number | null)[], persisted: number[], executions: number[] = largest.map((v) => (v === null ? 0 : 2)), withPersisted: number[] = persisted.map((v) => (v > 0 ? 1 : 0))): FleetSeriesHook {
  return { id: h.id, hookEvent: h.hookEvent, hookName: h.hookName, largest, outputsPersisted: persisted, executionsWithPersisted: withPersisted, executions, sizeUnknownExecutions: executions.map(() => 0) };
}

/** GET /api/v1/fleet/series over the last 24 hours in 6-hour buckets (`rest`: the hooks past its limit). */
export function fleet(hooks: FleetSeriesHook[], rest: FleetSeriesRest | null = null): FleetSeriesResponse {
  return {
    from: '2026-11-29T06:00:00.000Z', to: '2026-11-30T06:00:00.000Z', step: 21_600,
    buckets: ['2026-11-29T06:00:00.000Z', '2026-11-29T12:00:00.000Z', '2026-11-29T18:00:00.000Z', '2026-11-30T00:00:00.000Z'],
    ends: ['2026-11-29T12:00:00.000Z', '2026-11-29T18:00:00.000Z', '2026-11-30T00:00:00.000Z', '2026-11-30T06:00:00.000Z'],
    hooks,
    rest,
    total: hooks.length + (rest?.hooks ?? 0),
  };
}

/** A bucket of a series (an hour long unless `over` says where it ends). */
export function bucket(start: string, over: Partial<SeriesBucket> = {}): SeriesBucket {
  return { ...counters(), start, end: new Date(Date.parse(start) + 3_600_000).toISOString(), status: 'ok', ...over };
}

/** GET /api/v1/hooks/:id/series with one bucket per day (the forecast's input). */
export function dailySeriesOf(h: HookSummary, days: { day: string; largest: number | null; executions?: number }[]): SeriesResponse {
  return {
    hook: { id: h.id, hookEvent: h.hookEvent, hookName: h.hookName },
    from: `${days[0]?.day ?? '2026-11-01'}T00:00:00.000Z`, to: '2026-11-30T08:30:00.000Z', step: 86_400,
    buckets: days.map((d) => bucket(`${d.day}T00:00:00.000Z`, {
      end: new Date(Math.min(Date.parse(`${d.day}T00:00:00.000Z`) + 86_400_000, Date.parse('2026-11-30T08:30:00.000Z'))).toISOString(),
      executions: d.executions ?? (d.largest === null ? 3 : 5),
      sizeUnknownExecutions: d.largest === null ? (d.executions ?? 3) : 0,
      maxChars: { additionalContext: d.largest, stdout: d.largest === null ? null : 12, systemMessage: null, initialUserMessage: null },
      status: d.largest === null ? null : 'ok',
    })),
  };
}

export function alert(id: string, over: Partial<AlertSummary> = {}): AlertSummary {
  return {
    id, fingerprint: `fp-${id}`, rule: 'persisted', state: 'firing',
    labels: { alertname: 'HookOutputPersisted', rule: 'persisted', hook_event: 'Stop', hook_name: OVER.hookName, severity: 'critical' },
    annotations: { summary: 'Stop:lint-report persisted 1 output (over the 10,000-character cap)' },
    activeAt: '2026-11-30T08:25:00.000Z', startsAt: '2026-11-30T08:25:00.000Z', endsAt: null, firstEventAt: null, lastNotifiedAt: '2026-11-30T08:25:01.000Z',
    deliveries: [{ receiver: 'ops', status: 'firing', outcome: 'delivered', at: '2026-11-30T08:25:01.000Z', httpStatus: 200 }], silencedBy: [], hookId: OVER.id,
    ...over,
  };
}
