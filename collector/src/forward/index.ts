/**
 * Inline collector mode: every OTLP request (logs, metrics, traces) is committed to a durable queue and
 * delivered to one downstream endpoint unchanged. With no endpoint (fan-out mode) nothing is built and
 * nothing is forwarded.
 */
import { existsSync } from 'node:fs';
import { openFor } from '../config/setting.ts';
import { ClientTlsCredentials } from '../net/tls.ts';
import type { Logger } from '../telemetry/logger.ts';
import { ForwardingStage } from './consumer.ts';
import { deliveryEnricher } from './enrich.ts';
import type { Exporter } from './exporter.ts';
import { GrpcExporter } from './exporter-grpc.ts';
import { HttpExporter } from './exporter-http.ts';
import { Forwarder, type BackoffOptions, type ForwarderStatus } from './forwarder.ts';
import { DurableQueue, type DeadLetter, type DeadLetterSummary } from './queue.ts';
import type { ForwardConfig } from './settings.ts';
import { fullLockProblem } from '../store/sqlite/file-owner.ts';
import { StoreInUseError } from '../store/sqlite/process-lock.ts';

export interface ForwardingOptions {
  logger: Logger;
  now?: () => number;
  synchronous?: 'full' | 'normal';
  /** retention.events: requests and dead letters received longer ago are removed (at start, then by expire). */
  retentionMs?: number;
  /** Overrides of the retry schedule beyond what the config sets (tests). */
  backoff?: Partial<BackoffOptions>;
}

/** A running forwarding pipeline for one destination. */
export interface Forwarding {
  stage: ForwardingStage;
  forwarder: Forwarder;
  queue: DurableQueue;
  exporter: Exporter;
  /** The forwarder's status; its lastError names the queue file's fault first while the file cannot take writes. */
  status(): ForwarderStatus;
  deadLetters(limit?: number): DeadLetter[];
  deadLetterSummary(): DeadLetterSummary;
  /** Requeues the dead letters (as many as the queue has room for) and wakes delivery. */
  replayDeadLetters(): Promise<{ replayed: number; remaining: number }>;
  /**
   * Retention: removes queued requests and dead letters received before `beforeMs`; resolves to how many. Once
   * `signal` is aborted it ends at its next pause (DurableQueue.expire).
   */
  expire(beforeMs: number, signal?: AbortSignal): Promise<number>;
  /** Stops delivery after the attempt in flight and closes the queue file. Safe twice. */
  stop(): Promise<void>;
}

/**
 * Fan-out mode over a queue file inline mode left (forward.endpoint removed while requests waited): they are
 * not delivered, so the start says so, and retention still removes what is past retention.events (the file
 * holds raw telemetry). A missing file is not created.
 */
async function checkLeftQueue(config: ForwardConfig, opts: ForwardingOptions): Promise<void> {
  if (!existsSync(config.queue.path)) return;
  let queue: DurableQueue;
  try {
    queue = new DurableQueue({ path: config.queue.path, maxBytes: config.queue.maxBytes, deadLetterMaxBytes: config.deadLetters.maxBytes });
  } catch (err) {
    // Fan-out mode does not need the file: one it cannot read, or another process uses, is reported, not a reason to stop.
    if (err instanceof StoreInUseError) {
      opts.logger.warn('forwarding is off (no forward.endpoint); another hookwatch process uses the forward queue file and holds its lock: what the file holds is left to that process, neither delivered nor expired here', { path: config.queue.path, lock: err.lock, ...(err.holder ? { holder: err.holder } : {}) });
      return;
    }
    opts.logger.warn('forwarding is off (no forward.endpoint); a forward queue file is there but cannot be read, so what it may hold is neither delivered nor expired', { path: config.queue.path, err });
    return;
  }
  try {
    if (opts.retentionMs !== undefined) await queue.expire((opts.now ?? Date.now)() - opts.retentionMs);
    const queued = queue.depth;
    const deadLetters = queue.deadLetterSummary().count;
    if (queued + deadLetters > 0) {
      opts.logger.warn('forwarding is off (no forward.endpoint), but the forward queue holds requests from when it was on: they are not delivered; set forward.endpoint again to deliver them, or remove the file', { path: config.queue.path, queued, deadLetters });
    }
  } finally {
    queue.close();
  }
}

/**
 * Builds the exporter named by `forward.protocol`, connecting with `tls` (forward.tls.*) when given; the endpoint
 * was checked as the configuration was read (settings.ts, checkEndpoint).
 */
export function createExporter(config: ForwardConfig, now?: () => number, tls?: ClientTlsCredentials): HttpExporter | GrpcExporter {
  if (config.protocol === 'grpc') {
    return new GrpcExporter({ endpoint: config.endpoint, headers: config.headers, compression: config.compression, timeoutMs: config.timeoutMs, ...(tls ? { tls } : {}) });
  }
  return new HttpExporter({ endpoint: config.endpoint, protocol: config.protocol, headers: config.headers, compression: config.compression, timeoutMs: config.timeoutMs, ...(tls ? { tls } : {}), ...(now ? { now } : {}) });
}

/** Opens the queue and starts delivery; undefined in fan-out mode (no endpoint). */
export async function startForwarding(config: ForwardConfig, opts: ForwardingOptions): Promise<Forwarding | undefined> {
  if (!config.endpoint) {
    await checkLeftQueue(config, opts);
    return undefined;
  }
  // Before the queue opens: a CA, certificate or key that cannot be used stops the start, naming its setting.
  const tls = config.tls ? ClientTlsCredentials.open(config.tls, opts.logger, opts.now) : undefined;
  const exporter = createExporter(config, opts.now, tls);
  const queue = openFor('forward.queue.path', config.queue.path, () => new DurableQueue({ path: config.queue.path, maxBytes: config.queue.maxBytes, deadLetterMaxBytes: config.deadLetters.maxBytes, ...(opts.synchronous ? { synchronous: opts.synchronous } : {}) }), (err) => fullLockProblem(config.queue.path, err, "the forwarding queue's lock", 'forward.queue.path'));
  try {
    // A refusal is scrubbed before it is stored; a dead letter an earlier version stored may still repeat a
    // credential of the destination: its text is scrubbed in the file with the destination's current secrets.
    queue.scrubDeadLetterReasons(exporter.scrub);
    // Before delivery resumes: nothing past retention is sent on after a long stop.
    if (opts.retentionMs !== undefined) {
      const expired = await queue.expire((opts.now ?? Date.now)() - opts.retentionMs);
      if (expired) opts.logger.warn('retention removed undelivered forwarding requests and dead letters older than retention.events', { destination: exporter.description, removed: expired });
    }
  } catch (err) {
    // The start fails: the file is let go, for a start retried in this process to take.
    queue.close();
    await exporter.close();
    throw err;
  }
  const forwarder = new Forwarder({
    queue,
    exporter,
    logger: opts.logger,
    maxElapsedMs: config.retry.maxElapsedMs,
    backoff: { initialMs: config.retry.initialMs, maxMs: config.retry.maxMs, ...opts.backoff },
    ...(opts.now ? { now: opts.now } : {}),
  });
  const stage = new ForwardingStage({ queue, forwarder, exporter, logger: opts.logger, ...(config.enrich ? { transform: deliveryEnricher((err) => opts.logger.warn('forwarding a logs request without hookwatch.delivery: it could not be rewritten', { destination: exporter.description, err })) } : {}) });
  forwarder.start();
  // A rotated CA or client certificate is used for the connections made from then on.
  tls?.start();
  if (queue.depth > 0) opts.logger.info('forwarding resumes with queued requests', { destination: exporter.description, queued: queue.depth, bytes: queue.bytes });
  let stopping: Promise<void> | undefined;
  return {
    stage,
    forwarder,
    queue,
    exporter,
    status: () => {
      const s = forwarder.status();
      // The queue file refusing writes is the error that matters most: nothing new can be forwarded.
      const fault = stage.faultMessage();
      return fault === null ? s : { ...s, lastError: s.lastError === null ? fault : `${fault}; ${s.lastError}` };
    },
    deadLetters: (limit) => queue.deadLetters(limit),
    deadLetterSummary: () => queue.deadLetterSummary(),
    replayDeadLetters: async () => {
      const r = await queue.replayDeadLetters();
      if (r.replayed) {
        opts.logger.info('dead letters requeued', { destination: exporter.description, replayed: r.replayed, remaining: r.remaining });
        forwarder.notify();
      }
      return r;
    },
    expire: (beforeMs, signal) => queue.expire(beforeMs, signal),
    stop: () => {
      stopping ??= (async () => {
        tls?.stop();
        await forwarder.stop();
        await exporter.close();
        queue.close();
      })();
      return stopping;
    },
  };
}

export { ForwardingStage } from './consumer.ts';
export { DurableQueue } from './queue.ts';
export type { ForwarderStatus } from './forwarder.ts';
