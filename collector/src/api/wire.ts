/**
 * From the store's figures (store/model.ts) to the JSON API's shapes (shared/src/api.ts): every field the API
 * sends is named here, so a field the store adds (or carries alongside, such as a hook's info) never reaches a
 * client by accident, and a wire field can be renamed or derived in one place.
 */
import type * as wire from '../../../shared/src/api.ts';
import type { TranscriptCommandRow as WireCommandRow } from '../../../shared/src/transcript-api.ts';
import { OUTPUT_CAP_CHARS, largestOutput } from '../../../shared/src/cliff.ts';
import { classifyCounters } from '../hooks/cliff.ts';
import { COUNT_FIELDS, SIZE_FIELDS, type BreakdownRow, type ClientVersion, type ClusterState, type HookCounters, type TranscriptCommandRow } from '../store/model.ts';
import type { HookInfo } from '../store/store.ts';
import { formatRfc3339 } from '../rfc3339.ts';

/** Fails to compile when the wire counters gain a field the domain counters do not map. */
type Unmapped = Exclude<keyof wire.HookCounters, keyof HookCounters>;
const everyWireCounterMapped: [Unmapped] extends [never] ? true : Unmapped = true;
void everyWireCounterMapped;

export function wireCounters(c: HookCounters): wire.HookCounters {
  const out = { durationMsMax: c.durationMsMax } as wire.HookCounters;
  for (const f of COUNT_FIELDS) out[f] = c[f];
  for (const f of SIZE_FIELDS) out[f] = { ...c[f] };
  return out;
}

/** Chars left under the cap by the largest output (negative past it), or null when no size is known. */
export function headroom(c: HookCounters): number | null {
  const max = largestOutput(c);
  return max === null ? null : OUTPUT_CAP_CHARS - max;
}

/** A hook with its counters, its delivery status and its headroom under the cap (null when unknown). */
export function hookSummary(info: HookInfo, c: HookCounters): wire.HookSummary {
  return {
    id: info.id,
    hookEvent: info.hookEvent,
    hookName: info.hookName,
    ...wireCounters(c),
    status: classifyCounters(c),
    headroom: headroom(c),
    firstSeen: formatRfc3339(info.firstSeenMs),
    lastSeen: formatRfc3339(info.lastSeenMs),
  };
}

/** A series bucket; an empty one has no status rather than a made-up one. */
export function seriesBucket(startMs: number, endMs: number, c: HookCounters): wire.SeriesBucket {
  return { start: formatRfc3339(startMs), end: formatRfc3339(endMs), ...wireCounters(c), status: c.executions > 0 ? classifyCounters(c) : null };
}

export function breakdownRow(r: BreakdownRow): wire.BreakdownRow {
  return { value: r.value, ...wireCounters(r), status: classifyCounters(r) };
}

export function clientVersion(v: ClientVersion): wire.ClientVersion {
  return { serviceName: v.serviceName, version: v.version, executions: v.executions, sizeUnknownExecutions: v.sizeUnknownExecutions, hasSizeData: v.hasSizeData };
}

export function transcriptCommand(r: TranscriptCommandRow): WireCommandRow {
  const { command, runs, outputs, delivered, persisted, unconfirmed, largestOutputChars, largestDeliveredChars, sessions } = r;
  return { command, runs, outputs, delivered, persisted, unconfirmed, largestOutputChars, largestDeliveredChars, sessions };
}

/** GET /api/v1/cluster. A single process's lease has no expiry: the wire has always said '' for it. */
export function clusterResponse(s: ClusterState): wire.ClusterResponse {
  return {
    backend: s.backend,
    self: s.self,
    leader: s.leader && { replica: s.leader.replica, epoch: s.leader.epoch, expiresAt: s.leader.expiresAtMs === null ? '' : formatRfc3339(s.leader.expiresAtMs) },
    leaseTtlSeconds: s.leaseTtlSeconds,
    replicas: s.replicas.map((r) => ({
      replica: r.replica, leader: r.leader, self: r.self, startedAt: formatRfc3339(r.startedAtMs), lastHeartbeat: formatRfc3339(r.lastHeartbeatMs),
      heartbeatAgeSeconds: r.heartbeatAgeSeconds, alive: r.alive,
    })),
  };
}
