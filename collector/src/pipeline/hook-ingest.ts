/**
 * The hook stage: extracts hook events from decoded logs, commits them to the store (the OTLP 200 waits for
 * the commit), then tells listeners (alerting) about the newly stored events and guard trims.
 */
import { GUARD_TRIM_EVENT } from '../../../shared/src/guard-trims.ts';
import { HOOK_EVENT_NAMES, extractHookEventsSteps } from '../hooks/extract.ts';
import type { HookEvent } from '../hooks/model.ts';
import { runPaced } from '../paced.ts';
import { FINDING_EVENT_NAME, findingCollector, findingExtractSteps } from '../hooks/transcript-findings.ts';
import { guardTrimCollector, guardTrimExtract } from '../hooks/guard-trim.ts';
import type { LogsRequest } from '../otlp/model.ts';
import type { Store } from '../store/store.ts';
import type { Privacy } from '../privacy/index.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { ConsumeResult, IngestListener, LogsConsumer, RawRequest } from './consumer.ts';
import { OverloadedError } from './errors.ts';

export interface HookIngestOptions {
  store: Store;
  /** delivery.nearThreshold at start; a reload changes it with setNearThreshold. */
  nearThreshold: number;
  dimensions: readonly string[];
  /** Batches waiting for the store at once before new ones get 503 + Retry-After. */
  maxPending: number;
  /** otlp.maxFutureSkew: records stamped further ahead are stored at their receive time. */
  maxFutureSkewMs?: number;
  logger: Logger;
  now?: () => number;
  /** Hashes and drops attributes before anything is stored; none when absent. */
  privacy?: Privacy;
}

/** Counters of what the hook stage has seen, for /metrics and tests. */
export interface IngestStats {
  batches: number;
  logRecords: number;
  hookEvents: number;
  stored: number;
  duplicates: number;
  rejectedRecords: number;
  otherRecords: number;
  storeErrors: number;
  storeSeconds: number;
  /** Transcript findings (`hookwatch scan --send`) stored apart from telemetry, and those already stored. */
  transcriptFindings: number;
  transcriptFindingDuplicates: number;
  /** Events counted under an overflow hook (store.maxHooks reached). */
  folded: number;
  /** Hook events older than retention.events keeps, not stored (IngestResult.expired). */
  expired: number;
  /** Events stamped too far ahead, stored at their receive time. */
  clampedFuture: number;
}

/**
 * Hook events a request may hold and still be committed in one store transaction, as every batch of Claude Code's
 * is (512 records at most). A larger request (up to otlp.maxRequestBytes: some 70,000) is committed in parts, one
 * after the other, with the event loop served between them.
 */
export const ONE_COMMIT_EVENTS = 1024;
/**
 * What one part of a larger request's commit aims to take. An event can cost 10 µs to commit or, with attribute
 * values the store has not seen (a new session), 40 times that; each part is sized by what the one before took.
 */
const PART_TARGET_MS = 20;
const PART_EVENTS = { first: 128, min: 16, max: 4096 } as const;

/** What the parts of one request's commit came to (ingestInParts), besides what stats counts as they commit. */
interface PartsResult {
  folded: number;
  overflowHooks: Set<string>;
  expired: number;
  expiredBeforeMs?: number;
}

/**
 * The records whose attributes the hook stage reads: hook events, guard trims and transcript findings. Any other
 * record is counted and passed over, so the receivers need not build its attributes (LogsConsumer.eventNames).
 */
export const HOOK_STAGE_EVENT_NAMES: ReadonlySet<string> = new Set([...HOOK_EVENT_NAMES, GUARD_TRIM_EVENT, FINDING_EVENT_NAME]);

export class HookIngest implements LogsConsumer {
  readonly eventNames = HOOK_STAGE_EVENT_NAMES;
  readonly stats: IngestStats = { batches: 0, logRecords: 0, hookEvents: 0, stored: 0, duplicates: 0, rejectedRecords: 0, otherRecords: 0, storeErrors: 0, storeSeconds: 0, transcriptFindings: 0, transcriptFindingDuplicates: 0, folded: 0, clampedFuture: 0, expired: 0 };
  private pending = 0;
  /**
   * The requests counted in stats already: an OTLP/gRPC export held while the store is unavailable is consumed
   * again on each try (receiver/otlp-grpc/store-hold.ts), and is still one batch of these records.
   */
  private readonly counted = new WeakSet<RawRequest>();
  private readonly listeners: IngestListener[] = [];
  private readonly placeFreedListeners: (() => void)[] = [];
  private readonly opts: HookIngestOptions;
  private near: number;

  constructor(opts: HookIngestOptions) {
    this.opts = opts;
    this.near = opts.nearThreshold;
  }

  /** Characters above which an output is near the cap, as executions received now are classified. */
  get nearThreshold(): number {
    return this.near;
  }

  /** A reloaded delivery.nearThreshold: batches extracted from now on are classified by it; stored ones keep theirs. */
  setNearThreshold(chars: number): void {
    this.near = chars;
  }

  addListener(l: IngestListener): void {
    this.listeners.push(l);
  }

  /**
   * Calls `listener` each time a store write ends, a place among otlp.maxPendingRequests coming free: the OTLP/gRPC
   * exports held for want of one (receiver/otlp-grpc/store-hold.ts) try again then, whichever port's request held it.
   */
  onPlaceFreed(listener: () => void): void {
    this.placeFreedListeners.push(listener);
  }

  admit(): void {
    if (this.pending >= this.opts.maxPending) {
      throw new OverloadedError(`${this.pending} batches are waiting for the store; retry later`, 1);
    }
  }

  async consumeLogs(req: LogsRequest, raw: RawRequest): Promise<ConsumeResult> {
    this.admit();
    // Transcript findings go to their own table, never into telemetry's counts; outputs trimmed by hookwatch guard
    // are likewise kept apart. Both are taken in the hook events' walk over the records.
    const findings = findingCollector(this.opts.now);
    const trims = guardTrimCollector(this.opts.now);
    const x = await runPaced(extractHookEventsSteps(req, {
      nearThreshold: this.near,
      dimensions: this.opts.dimensions,
      others: [findings, trims],
      ...(this.opts.maxFutureSkewMs !== undefined ? { maxFutureSkewMs: this.opts.maxFutureSkewMs } : {}),
      ...(this.opts.now ? { now: this.opts.now } : {}),
    }));
    const t = await runPaced(findingExtractSteps(findings.out));
    const guard = guardTrimExtract(trims.out);
    if (!this.counted.has(raw)) {
      this.counted.add(raw);
      this.stats.batches++;
      this.stats.logRecords += x.events.length + x.rejected + x.otherRecords;
      this.stats.hookEvents += x.events.length;
      this.stats.rejectedRecords += x.rejected + t.rejected + guard.rejected;
      this.stats.otherRecords += x.otherRecords - t.findings.length - t.rejected - guard.trims.length - guard.rejected;
      this.stats.clampedFuture += x.clamped;
    }
    // Warnings about records that were kept: OTLP partial success with rejected 0 and a non-empty message.
    const notes: string[] = [];
    if (x.unzoned > 0) notes.push(`${x.unzoned} hook record(s) with an event.timestamp that names no offset (Z, +01:00) or is no time after 1970 were timed by their timeUnixNano (else observedTimeUnixNano, else the receive time)`);
    if (x.clamped > 0) notes.push(`${x.clamped} hook record(s) stamped more than ${Math.round((this.opts.maxFutureSkewMs ?? 0) / 1000)} s ahead of the receive time were stored at the receive time (check the client's clock)`);
    if (t.findings.length > 0) {
      const r = await this.storeWrite(() => this.opts.store.recordTranscriptFindings(t.findings));
      this.stats.transcriptFindings += r.inserted;
      this.stats.transcriptFindingDuplicates += r.duplicates;
    }
    if (guard.trims.length > 0) {
      // A retried report stores nothing new: its alerts have read it already.
      const stored = await this.storeWrite(() => this.opts.store.recordGuardTrims(guard.trims));
      if (stored.length > 0) {
        const hookIds = [...new Set(stored.map((g) => g.hookId))];
        this.notify((l) => l.onGuardTrims?.(hookIds, stored));
      }
    }
    let expired: { count: number; problem: string } | undefined;
    if (x.events.length > 0) {
      const privacy = this.opts.privacy;
      const events = privacy ? x.events.map((e) => privacy.apply(e)) : x.events;
      const r = await this.storeWrite(() => this.ingestInParts(events));
      if (r.folded) {
        this.stats.folded += r.folded;
        notes.push(`${r.folded} hook record(s) of new hook names counted under ${[...r.overflowHooks].map((n) => JSON.stringify(n)).join(', ')}: the store holds its limit of ${this.opts.store.maxHooks} hooks (store.maxHooks)`);
      }
      if (r.expired) {
        this.stats.expired += r.expired;
        expired = { count: r.expired, problem: `older than retention.events keeps (stamped before ${new Date(r.expiredBeforeMs ?? 0).toISOString()})` };
      }
    }
    // The records rejected one by one list a few of their problems; the expired ones share one line.
    const each = x.rejected + t.rejected + guard.rejected;
    const rejected = each + (expired?.count ?? 0);
    if (rejected > 0) {
      const listed = [...x.problems, ...t.problems, ...guard.problems];
      const more = each > listed.length ? ` (and ${each - listed.length} more)` : '';
      const problems = [...(expired ? [`${expired.count} ${expired.problem}`] : []), ...(listed.length > 0 ? [`${listed.join('; ')}${more}`] : [])];
      notes.unshift(`${rejected} hook record(s) rejected: ${problems.join('; ')}`);
    }
    return { rejected, message: notes.join('. '), statuses: x.statuses };
  }

  /**
   * Commits `events`: in one transaction up to ONE_COMMIT_EVENTS, else in parts of PART_TARGET_MS each, one after
   * the other; each part's new events are told to the listeners once it is committed. A part that fails fails the
   * request after the parts before it were committed; the client's retry stores none of those twice (the
   * idempotency keys deduplicate them), and the 200 goes out only once every part is committed.
   */
  private async ingestInParts(events: HookEvent[]): Promise<PartsResult> {
    const out: PartsResult = { folded: 0, overflowHooks: new Set(), expired: 0 };
    let size: number = events.length <= ONE_COMMIT_EVENTS ? events.length : PART_EVENTS.first;
    for (let at = 0; at < events.length;) {
      const part = at === 0 && size >= events.length ? events : events.slice(at, at + size);
      at += part.length;
      const started = performance.now();
      const r = await this.opts.store.ingest(part);
      const took = performance.now() - started;
      size = Math.round(Math.min(PART_EVENTS.max, Math.max(PART_EVENTS.min, part.length * PART_TARGET_MS / Math.max(took, 1))));
      this.stats.stored += r.inserted.length;
      this.stats.duplicates += r.duplicates;
      out.folded += r.folded ?? 0;
      for (const h of r.overflowHooks ?? []) out.overflowHooks.add(h);
      out.expired += r.expired ?? 0;
      if (r.expiredBeforeMs !== undefined) out.expiredBeforeMs = r.expiredBeforeMs;
      if (r.inserted.length > 0) this.notify((l) => l.onIngested(r.inserted));
    }
    return out;
  }

  /** A store write: counted as pending (what admit() limits), timed, and counted as a store error when it fails. */
  private async storeWrite<T>(write: () => Promise<T>): Promise<T> {
    this.pending++;
    const started = performance.now();
    try {
      return await write();
    } catch (err) {
      this.stats.storeErrors++;
      throw err;
    } finally {
      this.pending--;
      this.stats.storeSeconds += (performance.now() - started) / 1000;
      for (const l of this.placeFreedListeners) l();
    }
  }

  private notify(tell: (l: IngestListener) => void): void {
    for (const l of this.listeners) {
      try {
        tell(l);
      } catch (err) {
        // A listener's failure must never fail an ingest whose data is already committed.
        this.opts.logger.error('ingest listener failed', { err });
      }
    }
  }
}
