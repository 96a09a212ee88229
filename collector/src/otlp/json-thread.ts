/**
 * Parses large OTLP/JSON bodies on a thread of their own (json-worker.ts), so that the event loop that receives
 * OTLP, answers probes and serves the dashboard is not held for the JSON.parse of a body of otlp.maxRequestBytes
 * (some 130 ms for logs, 200 to 500 ms for metrics or traces, in one piece: docs/benchmarks.md). Protobuf bodies
 * need none of this: they are decoded and skimmed in slices on the event loop (paced.ts).
 *
 * One worker, started with the first body and kept while bodies come, stopped once idle for JSON_THREAD_IDLE_MS: a
 * body is copied to it (the request keeps its own, to forward byte for byte) and parsed there, one body at a time.
 * A metrics or traces body gets back a verdict, the same error as on the event loop (a DecodeError naming the
 * JSON path, or DecodeLimitError); a logs body its decoded model, serialized in fragments that the event loop
 * takes in one slice each (a whole model of some 30,000 records costs about as long to take in at once as to
 * parse). A worker that fails or does not answer in JSON_THREAD_TIMEOUT_MS fails its body only (500, or 503 to
 * retry) and is replaced for the next one.
 */
import { deserialize } from 'node:v8';
import type { ResourceLimits, Worker } from 'node:worker_threads';
import type { Signal } from '../pipeline/consumer.ts';
import { OverloadedError } from '../pipeline/errors.ts';
import { awaiting, type PacedSteps } from '../paced.ts';
import { heapLimits, startWorker } from '../worker-thread.ts';
import { DecodeError, DecodeLimitError, type Attributes, type DecodeBudget, type LogRecord, type LogsRequest, type ResourceLogs, type ScopeLogs } from './model.ts';

/**
 * Bodies larger than this are parsed on the thread; a smaller one holds the event loop some 15 to 40 ms at most.
 * The thread has a heap of its own, which a flood of bodies just over 1 MiB (1,000 records each) grew by some
 * 150 MB: below this the parse on the event loop is the cheaper of the two.
 */
export const JSON_THREAD_MIN_BYTES = 2 * 1024 * 1024;

/** How long the thread may take over one body (a body of otlp.maxRequestBytes takes under a second). */
const JSON_THREAD_TIMEOUT_MS = 10_000;

/**
 * How long the worker is kept with nothing to parse. Idle, a worker's heap is never collected: what its last parse
 * left (some four times the body) would stay until the next large body. The next one starts a new worker (some
 * 100 ms, off the event loop).
 */
const JSON_THREAD_IDLE_MS = 5_000;

/**
 * The thread's old space per byte of otlp.maxRequestBytes (heapLimits; 240 MiB for the default 20 MiB). A body of
 * that size needs some four to eight times itself while it is parsed (its text, the parsed document, the model and
 * its fragments): bench/lib/batch.ts's maxSizeRequest, Claude Code's records, parsed in an old space of 88 MiB and
 * not 72; a body of the smallest records the decode bound admits (some 430,000 of 50 bytes) in 160 and not 136.
 * Past this bound the thread stops (ERR_WORKER_OUT_OF_MEMORY) and fails only the body it held.
 */
const JSON_THREAD_OLD_SPACE_PER_BODY_BYTE = 12;

/** Least old space of the thread, whatever otlp.maxRequestBytes: its code and a small body's parse. */
const JSON_THREAD_MIN_OLD_SPACE = 64 * 1024 * 1024;

/** The heap bound of the thread that parses bodies of up to `maxRequestBytes` (otlp.maxRequestBytes). */
export function jsonThreadLimits(maxRequestBytes: number): ResourceLimits {
  return heapLimits(Math.max(JSON_THREAD_MIN_OLD_SPACE, JSON_THREAD_OLD_SPACE_PER_BODY_BYTE * maxRequestBytes));
}

/** What the event loop sends the worker: the body (a copy of its own, transferred), and the request's decode bound. */
export interface JsonJob {
  id: number;
  signal: Signal;
  body: ArrayBuffer;
  maxBytes: number;
}

/**
 * What the thread answers: the decoded logs as fragments (none for metrics or traces) and what they were charged
 * (DecodeBudget.bytes), or why the body was refused.
 */
export type JsonAnswer =
  | { id: number; bytes: number; fragments: ArrayBuffer[] }
  | { id: number; failure: { kind: 'decode' | 'limit' | 'other'; message: string; limitBytes?: number; readShare?: number } };

/** Log records of a scope: with `scope`, the first of a new ScopeLogs; without, more of the one before. */
export interface RecordsPiece {
  scope?: ScopeLogs['scope'];
  records: LogRecord[];
}

/** A fragment's pieces, in order: a resource opens a ResourceLogs, records go to its ScopeLogs. */
export type LogsPiece = { resource: Attributes } | RecordsPiece;

/** A body waiting for the worker, or the one it holds. */
interface Job {
  id: number;
  signal: Signal;
  body: Buffer;
  maxBytes: number;
  resolve: (answer: JsonAnswer) => void;
  reject: (err: unknown) => void;
}

/** The model of a logs body from its fragments: one fragment taken in per step. */
function* assemble(fragments: ArrayBuffer[]): Generator<void, LogsRequest, void> {
  const req: LogsRequest = { resourceLogs: [] };
  let resource: ResourceLogs | undefined;
  let scope: ScopeLogs | undefined;
  for (const [i, fragment] of fragments.entries()) {
    if (i > 0) yield;
    for (const piece of deserialize(Buffer.from(fragment)) as LogsPiece[]) {
      if ('resource' in piece) {
        resource = { resource: piece.resource, scopeLogs: [] };
        req.resourceLogs.push(resource);
        continue;
      }
      if (piece.scope) {
        scope = { scope: piece.scope, logRecords: [] };
        resource?.scopeLogs.push(scope);
      }
      for (const rec of piece.records) scope?.logRecords.push(rec);
    }
  }
  return req;
}

export class JsonThread {
  private worker: Worker | undefined;
  private readonly waiting: Job[] = [];
  private running: (Job & { timer: NodeJS.Timeout }) | undefined;
  private nextId = 1;
  private readonly timeoutMs: number;
  private readonly idleMs: number;
  private idleTimer: NodeJS.Timeout | undefined;
  /** The worker's own heap bound (and stack): a body whose parse needs more fails alone. */
  readonly resourceLimits: ResourceLimits;

  /**
   * For bodies of up to `maxRequestBytes` (otlp.maxRequestBytes), with a heap bound for them (jsonThreadLimits);
   * `resourceLimits` replaces that bound.
   */
  constructor(opts: { maxRequestBytes: number; timeoutMs?: number; idleMs?: number; resourceLimits?: ResourceLimits }) {
    this.timeoutMs = opts.timeoutMs ?? JSON_THREAD_TIMEOUT_MS;
    this.idleMs = opts.idleMs ?? JSON_THREAD_IDLE_MS;
    this.resourceLimits = opts.resourceLimits ?? jsonThreadLimits(opts.maxRequestBytes);
  }

  /** decodeLogsJson of `body` on the thread, within `bound`; the model taken in on the event loop in slices. */
  decodeLogsSteps(body: Buffer, bound: DecodeBudget): PacedSteps<LogsRequest> {
    const run = (): ReturnType<JsonThread['run']> => this.run('logs', body, bound.maxBytes);
    return (function* () {
      const { bytes, fragments } = yield* awaiting(run);
      bound.charge(bytes);
      return yield* assemble(fragments);
    })();
  }

  /** The check of a metrics or traces OTLP/JSON body (validate.ts) on the thread, within `bound`. */
  checkSteps(signal: Exclude<Signal, 'logs'>, body: Buffer, bound: DecodeBudget): PacedSteps<void> {
    return awaiting(async () => {
      await this.run(signal, body, bound.maxBytes);
    });
  }

  /** Stops the worker: a body it holds or that waits for it fails (503); the next body starts a new one. */
  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    clearTimeout(this.idleTimer);
    const stopped = new OverloadedError('the OTLP/JSON parser thread was stopped (hookwatch is stopping); retry later');
    for (const job of this.waiting.splice(0)) job.reject(stopped);
    this.finish()?.reject(stopped);
    await worker?.terminate();
  }

  /** `body` parsed on the thread: what it answered, its refusal as on the event loop, or why the thread failed. */
  private async run(signal: Signal, body: Buffer, maxBytes: number): Promise<{ bytes: number; fragments: ArrayBuffer[] }> {
    const answer = await new Promise<JsonAnswer>((resolve, reject) => {
      this.waiting.push({ id: this.nextId++, signal, body, maxBytes, resolve, reject });
      this.next();
    });
    if (!('failure' in answer)) return answer;
    const { kind, message, limitBytes, readShare } = answer.failure;
    if (kind === 'limit') throw new DecodeLimitError(limitBytes ?? maxBytes, readShare);
    throw kind === 'decode' ? new DecodeError(message) : new Error(message);
  }

  /** The next body waiting, sent to the worker (started now if there is none) when it holds none. */
  private next(): void {
    if (this.running) return;
    const job = this.waiting.shift();
    if (!job) {
      this.worker?.unref();
      this.stopWhenIdle();
      return;
    }
    clearTimeout(this.idleTimer);
    const worker = this.worker ?? this.start();
    worker.ref();
    const timer = setTimeout(() => {
      this.fail(worker, new OverloadedError(`parsing this ${job.body.length}-byte OTLP/JSON ${job.signal} request took longer than ${this.timeoutMs} ms; its parser thread is replaced, retry later`));
      void worker.terminate();
    }, this.timeoutMs);
    this.running = { ...job, timer };
    // Copied only now, when the worker takes it: a body still waiting holds no second copy.
    const body = new ArrayBuffer(job.body.length);
    new Uint8Array(body).set(job.body);
    worker.postMessage({ id: job.id, signal: job.signal, body, maxBytes: job.maxBytes } satisfies JsonJob, [body]);
  }

  /** The worker, stopped unless a body comes within JSON_THREAD_IDLE_MS; the next body starts a new one. */
  private stopWhenIdle(): void {
    const worker = this.worker;
    if (!worker) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      if (worker !== this.worker || this.running) return;
      this.worker = undefined;
      void worker.terminate();
    }, this.idleMs);
    this.idleTimer.unref();
  }

  /** The body the worker holds, no longer running. */
  private finish(): Job | undefined {
    const job = this.running;
    this.running = undefined;
    if (job) clearTimeout(job.timer);
    return job;
  }

  private start(): Worker {
    const worker = startWorker(new URL('./json-worker.ts', import.meta.url), { resourceLimits: this.resourceLimits });
    worker.on('message', (answer: JsonAnswer) => {
      if (worker !== this.worker || this.running?.id !== answer.id) return;
      this.finish()?.resolve(answer);
      this.next();
    });
    worker.on('error', (err) => this.fail(worker, new Error(`the OTLP/JSON parser thread failed: ${err.message}`)));
    worker.on('exit', (code) => this.fail(worker, new Error(`the OTLP/JSON parser thread stopped (exit code ${code})`)));
    this.worker = worker;
    return worker;
  }

  /** `worker` failed or hung: the body it held fails with `err`, the next body gets a new worker. */
  private fail(worker: Worker, err: Error): void {
    if (worker !== this.worker) return;
    this.worker = undefined;
    this.finish()?.reject(err);
    this.next();
  }
}
