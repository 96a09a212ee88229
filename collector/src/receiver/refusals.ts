/**
 * The OTLP requests both receivers refused, for the person setting hookwatch up: an OpenTelemetry exporter drops a
 * refused batch without a word, so a wrong endpoint or a missing token showed only as a counter on /metrics while
 * the dashboard kept saying it had no events. Each refusal is logged at warn, the first of each transport and
 * reason at once, then at most one line per REFUSAL_LOG_INTERVAL_MS with how many there were since the last (a
 * flood of them writes no more), naming the path asked, the client's address (never a header or token) and what
 * to change where that is known. The refusals of the last RECENT_REFUSALS_MS are kept by transport and reason
 * (count, last time, last path, what was wrong with the last) for the API's overview, in this process's memory:
 * each replica knows its own.
 *
 * A request that never arrived whole, its client having given up on it (client_aborted) or not received within
 * otlp.requestTimeout (request_timeout), is no refusal of hookwatch's; it is kept and logged alike, in its own words.
 *
 * Only a refusal reaches this: a request the receivers take costs nothing here.
 */
import { cut } from '../request-error.ts';
import { editDistance } from '../edit-distance.ts';
import { printable } from '../../../shared/src/printable.ts';
import { isNotRefused, type NotRefusedReason } from '../../../shared/src/otlp-refusals.ts';
import type { Logger } from '../telemetry/logger.ts';
import { ThrottledLine } from '../telemetry/throttled-line.ts';
import type { RejectReason } from './options.ts';

/** The most often each transport and reason of refusal is logged. */
export const REFUSAL_LOG_INTERVAL_MS = 60_000;
/** How far back the overview's recent refusals reach. */
export const RECENT_REFUSALS_MS = 15 * 60_000;
/** The recent refusals are counted per minute: RECENT_REFUSALS_MS in this many slots, the oldest dropped. */
const SLOT_MS = 60_000;

export type OtlpTransport = 'http' | 'grpc';

/** Where a refused request came from: the path (over gRPC the method) it asked for, and the client's address. */
export interface RefusedAt {
  path?: string | undefined;
  client?: string | undefined;
  /**
   * What was wrong with a request its decoder refused (bad_request), as the client was told: `request.resourceLogs
   * must be an array`. Logged and listed cut to PROBLEM_CHARS, its control and invisible characters written out: a
   * JSON parser's message quotes a few characters of the body.
   */
  problem?: string | undefined;
}

/** The most of a refused request's problem a line says. */
const PROBLEM_CHARS = 200;

/** The refusals of one transport and reason in the last RECENT_REFUSALS_MS (OverviewResponse's otlpRefusals). */
export interface RecentRefusal {
  transport: OtlpTransport;
  reason: RejectReason;
  count: number;
  lastAtMs: number;
  /** The path (over gRPC the method) the last of them asked for, cut as a refusal's message cuts it; no query string. */
  lastPath?: string;
  /** What the client's settings likely need, where known. */
  hint?: string;
  /** What was wrong with the last of them, where its decoder said (RefusedAt's problem), as a line says it. */
  lastProblem?: string;
}

/**
 * What a client's exporter settings likely got wrong for a path that is no signal's: OTEL_EXPORTER_OTLP_ENDPOINT
 * written with the signal's path, which the exporter appends again (`/v1/logs/v1/logs`), the signal's path with a
 * trailing slash (`/v1/logs/`), or the per-signal OTEL_EXPORTER_OTLP_LOGS_ENDPOINT, used as given, written
 * without it (a POST to `/`). `base` is this port's URL as a client would write it (`http://<host>:4318`).
 * Undefined for any other path.
 */
export function endpointHint(path: string, method: string | undefined, base: string): string | undefined {
  const appended = /\/v1\/(logs|metrics|traces)\/?$/.exec(path);
  const signal = appended?.[1] ?? '';
  const baseUrl = `OTEL_EXPORTER_OTLP_ENDPOINT is the base URL, such as ${base}, to which the exporter appends /v1/${signal}`;
  if (appended && appended.index > 0) return baseUrl;
  if (appended && path.endsWith('/')) return `no trailing slash: /v1/${signal}; ${baseUrl}`;
  const meant = nearSignalPath(path);
  if (meant) return `did you mean /v1/${meant}? (paths are lowercase; OTEL_EXPORTER_OTLP_${meant.toUpperCase()}_ENDPOINT is used as given: end it with /v1/${meant})`;
  return path === '/' && method === 'POST' ? 'OTEL_EXPORTER_OTLP_LOGS_ENDPOINT is used as given: end it with /v1/logs' : undefined;
}

/**
 * The signal a `/v1/<word>` path nearly names: another case (`/v1/Logs`, `/V1/LOGS`) or up to two letters off
 * (`/v1/log`, `/v1/lgos`, `/v1/trace`), a trailing slash allowed; a per-signal endpoint written by hand. Another
 * version (`/v2/logs`) is no near miss: a client of another protocol version is not helped by /v1's path.
 */
function nearSignalPath(path: string): string | undefined {
  const word = /^\/v1\/([^/]+)\/?$/i.exec(path)?.[1]?.toLowerCase();
  if (word === undefined) return undefined;
  // Lengths further apart than two edits cannot be near: a long path costs no distance matrix.
  return ['logs', 'metrics', 'traces'].find((signal) => Math.abs(word.length - signal.length) <= 2 && editDistance(word, signal) <= 2);
}

/** What to change for a refusal whose reason says it, whatever the request (the path's hint comes first). */
const REASON_HINTS: Partial<Record<RejectReason, string>> = {
  unauthenticated: 'hookwatch requires its ingest token (otlp.ingestToken): set OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer <token>"',
  unsupported_media_type: 'set OTEL_EXPORTER_OTLP_PROTOCOL to http/protobuf or http/json for this port, grpc for the OTLP/gRPC port',
  host_not_allowed: 'this port listens on loopback and answers only the names in http.allowedHosts: add the name the client uses',
  too_large: 'the request is larger than otlp.maxRequestBytes: raise it, or have the exporter send smaller batches',
  method_not_allowed: 'an OTLP export is a POST',
};

/**
 * Reasons kept and listed with the refusals, which are none of hookwatch's: the request never arrived whole, its
 * client gave up on it or it was not received within otlp.requestTimeout. How a line says them: `what` is `an OTLP
 * request` or `12 OTLP requests`.
 */
const NOT_REFUSED: Record<NotRefusedReason, (what: string, one: boolean) => string> = {
  client_aborted: (what, one) => `${one ? 'the client' : 'clients'} gave up on ${what} before sending ${one ? 'it' : 'them'} whole`,
  request_timeout: (what, one) => `${what} timed out before ${one ? 'it' : 'they'} arrived whole`,
};

interface Kept {
  transport: OtlpTransport;
  reason: RejectReason;
  /** Refusals per minute slot: [slot start, count], oldest first, none older than RECENT_REFUSALS_MS. */
  slots: [number, number][];
  lastAtMs: number;
  lastPath: string | undefined;
  lastClient: string | undefined;
  hint: string | undefined;
  lastProblem: string | undefined;
  /**
   * The last refusal this line logs, as the line says it: a refusal logged by a line of its own (`logged`) shares
   * the key, and would lend the line its path, client and hint.
   */
  logs: { path: string | undefined; client: string | undefined; hint: string | undefined; problem: string | undefined };
  line: ThrottledLine;
}

export interface OtlpRefusalsOptions {
  logger: Logger;
  /** The wall clock (the overview's times); Date.now unless given. */
  now?: () => number;
  /** REFUSAL_LOG_INTERVAL_MS unless given. */
  logIntervalMs?: number;
}

export class OtlpRefusals {
  private readonly kept = new Map<string, Kept>();
  private readonly logger: Logger;
  private readonly now: () => number;
  private readonly logIntervalMs: number;

  constructor(opts: OtlpRefusalsOptions) {
    this.logger = opts.logger;
    this.now = opts.now ?? Date.now;
    this.logIntervalMs = opts.logIntervalMs ?? REFUSAL_LOG_INTERVAL_MS;
  }

  /**
   * A request refused: kept, and logged at most once per interval for its transport and reason, unless `logged`
   * (a refusal the receiver has a line of its own for, such as a client speaking the other port's protocol).
   * `hint` overrides the reason's.
   */
  note(transport: OtlpTransport, reason: RejectReason, at: RefusedAt = {}, hint?: string, logged = false): void {
    const key = `${transport}:${reason}`;
    let kept = this.kept.get(key);
    if (!kept) {
      const entry: Kept = {
        transport, reason, slots: [], lastAtMs: 0, lastPath: undefined, lastClient: undefined, hint: undefined, lastProblem: undefined,
        logs: { path: undefined, client: undefined, hint: undefined, problem: undefined },
        line: new ThrottledLine(this.logIntervalMs, () => performance.now(), (requests) => this.write(entry, requests)),
      };
      kept = entry;
      this.kept.set(key, kept);
    }
    const nowMs = this.now();
    const slot = nowMs - (nowMs % SLOT_MS);
    const last = kept.slots.at(-1);
    if (last?.[0] === slot) last[1]++;
    else kept.slots.push([slot, 1]);
    while ((kept.slots[0]?.[0] ?? Infinity) <= nowMs - RECENT_REFUSALS_MS) kept.slots.shift();
    kept.lastAtMs = nowMs;
    kept.lastPath = at.path === undefined ? undefined : cut(at.path);
    kept.lastClient = at.client;
    kept.hint = hint ?? REASON_HINTS[reason];
    kept.lastProblem = at.problem === undefined ? undefined : printable(cut(at.problem, PROBLEM_CHARS));
    if (!logged) {
      kept.logs = { path: kept.lastPath, client: kept.lastClient, hint: kept.hint, problem: kept.lastProblem };
      kept.line.note();
    }
  }

  /** The refusals of the last RECENT_REFUSALS_MS, most first. */
  recent(): RecentRefusal[] {
    const since = this.now() - RECENT_REFUSALS_MS;
    const out: RecentRefusal[] = [];
    for (const k of this.kept.values()) {
      if (k.lastAtMs <= since) continue;
      // A slot that began before the window counts whole: the count is of the last 15 to 16 minutes.
      const count = k.slots.reduce((sum, [start, n]) => (start + SLOT_MS > since ? sum + n : sum), 0);
      out.push({ transport: k.transport, reason: k.reason, count, lastAtMs: k.lastAtMs, ...(k.lastPath === undefined ? {} : { lastPath: k.lastPath }), ...(k.hint === undefined ? {} : { hint: k.hint }), ...(k.lastProblem === undefined ? {} : { lastProblem: k.lastProblem }) });
    }
    return out.sort((a, b) => b.count - a.count || b.lastAtMs - a.lastAtMs);
  }

  /** Writes what the intervals held back (the receivers stopping). */
  flush(): void {
    for (const k of this.kept.values()) k.line.flush();
  }

  private write(k: Kept, requests: number): void {
    const what = requests === 1 ? 'an OTLP request' : `${requests} OTLP requests`;
    const since = requests === 1 ? '' : ' since the last line about them';
    const { path, client, hint, problem } = k.logs;
    const said = isNotRefused(k.reason) ? NOT_REFUSED[k.reason](what, requests === 1) : `refused ${what}`;
    const why = problem === undefined ? '' : requests === 1 ? `: ${problem}` : `; the last: ${problem}`;
    this.logger.warn(`otlp ${k.transport}: ${said} (${k.reason})${since}${why}${hint ? `; ${hint}` : ''}`, {
      transport: k.transport, reason: k.reason, requests,
      ...(path === undefined ? {} : { path }),
      ...(client === undefined ? {} : { client }),
    });
  }
}
