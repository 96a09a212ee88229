/**
 * One HTTP POST transport with retries, wrapped around every receiver (retry is not each sender's business):
 * per-attempt timeout, exponential backoff with full jitter (net/backoff.ts: sleep = random(0, min(cap, base * 2^attempt))),
 * Retry-After honoured, an overall deadline. 2xx delivers; 408, 429, 5xx and network errors retry; any other
 * status is permanent, and so is an answer whose headers are too large to read. Redirects are not followed: a signed body must not travel to another host. A receiver's
 * `tls` files are those of net/tls.ts: checked at start, re-read as they rotate, the next connection using them.
 */

import type { Agent } from 'undici';
import { fullJitterBackoff, parseRetryAfter } from '../net/backoff.ts';
import { ClientTlsAgent } from '../net/tls-agent.ts';
import { ClientTlsCredentials, tlsFailure } from '../net/tls.ts';
import type { Logger } from '../telemetry/logger.ts';
import { networkErrorCode, networkErrorWords, timedOutWords } from '../../../shared/src/network-error.ts';
import type { ReceiverConfig } from './model.ts';
import { HOOKWATCH_VERSION } from '../version.ts';

/** The User-Agent of every notification request. */
const USER_AGENT = `hookwatch/${HOOKWATCH_VERSION}`;

/** What one attempt came to. */
export interface AttemptResult {
  attempt: number;
  atMs: number;
  outcome: 'delivered' | 'retrying' | 'failed';
  httpStatus: number | null;
  error: string | null;
  durationMs: number;
}

/** The request of one attempt (headers may differ per attempt: a fresh signature timestamp). */
export interface OutgoingRequest {
  body: string;
  headers: Record<string, string>;
  /** Where this attempt goes, in place of SendOptions' (a reload changed the receiver since the first attempt). */
  target?: Pick<SendOptions, 'url' | 'timeoutMs' | 'tls'>;
}

export interface SendOptions {
  url: string;
  timeoutMs: number;
  /** Absolute time (ms since epoch, on `now`) after which no new attempt starts. */
  deadlineMs: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Most attempts (default: unbounded, the deadline decides). */
  maxAttempts?: number;
  /** Stops waiting and sending (service shutdown); the notification stays undelivered. */
  signal?: AbortSignal;
  now?: () => number;
  random?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  onAttempt?: (a: AttemptResult) => void;
  /** The receiver's TLS files (private CA, client certificate) as they are now; absent for the system defaults. */
  tls?: ClientTlsCredentials | null;
  /**
   * Asked before every attempt; false ends the delivery as aborted (another replica owns it now). One that throws
   * (the store that would say so did not answer) is a failed attempt, retried as any other until the deadline.
   */
  proceed?: () => Promise<boolean>;
}

/** One connection pool per receiver's TLS files, made on first use and again when they rotate. */
const tlsAgents = new WeakMap<ClientTlsCredentials, ClientTlsAgent>();

/** The fetch dispatcher for a receiver's TLS files; undefined uses fetch's default. */
export function tlsDispatcher(tls: ClientTlsCredentials | null | undefined): Agent | undefined {
  if (!tls) return undefined;
  let agent = tlsAgents.get(tls);
  if (!agent) {
    agent = new ClientTlsAgent(tls);
    tlsAgents.set(tls, agent);
  }
  return agent.dispatcher();
}

/**
 * Closes the connection pools made for these TLS files, connections in flight included: when alerting stops, once
 * its deliveries have ended, so no connection to a receiver outlives hookwatch's stop.
 */
export async function closeTlsDispatchers(tls: Iterable<ClientTlsCredentials>): Promise<void> {
  const agents = [...tls].map((credentials) => {
    const agent = tlsAgents.get(credentials);
    tlsAgents.delete(credentials);
    return agent;
  });
  await Promise.all(agents.map((agent) => agent?.destroy()));
}

/**
 * The TLS files of every receiver with `tls`, by receiver name, read and checked now: a file that cannot be used
 * is a ConfigError naming the setting (`alerting.receivers[0].tls.keyFile`), and hookwatch does not start. They
 * are read again every reloadInterval once started.
 */
export function openReceiverTls(receivers: readonly ReceiverConfig[], logger: Logger, now?: () => number): Map<string, ClientTlsCredentials> {
  const out = new Map<string, ClientTlsCredentials>();
  for (const r of receivers) if (r.tls) out.set(r.name, ClientTlsCredentials.open(r.tls, logger, now));
  return out;
}

export interface SendResult {
  outcome: 'delivered' | 'failed' | 'aborted';
  attempts: number;
  httpStatus: number | null;
  error: string | null;
}

/** True when a status is worth retrying: 408, 429 and 5xx. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** Sleeps, waking early (resolving) when the signal aborts. */
export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * How an attempt's error begins when it was not sent because SendOptions.proceed threw: whether it may go could
 * not be told (the shared store, asked whether this replica still leads, did not answer). Counted `other`.
 */
export const NOT_SENT_PREFIX = 'not sent: the shared store did not answer whether this replica still leads: ';

/** How an attempt's error begins when the TLS handshake with the receiver failed (counted on /metrics). */
export const TLS_FAILURE_PREFIX = 'TLS handshake failed: ';

/**
 * A network error as a short reason in words, its code kept (`connection refused (ECONNREFUSED): nothing listens
 * at that address`); never the URL or any part of it: a webhook's token may sit in its host name as well as in its
 * path or query. The attempt names its receiver.
 */
export function describeError(err: unknown, url: string, timeoutMs: number): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  let msg: string;
  const tls = tlsFailure(e?.cause);
  if (e?.name === 'TimeoutError') msg = timedOutWords(timeoutMs);
  else if (tls) msg = TLS_FAILURE_PREFIX + tls;
  else if (e?.cause?.code) msg = networkErrorWords(String(e.cause.code)) ?? String(e.cause.code);
  else msg = e?.cause?.message ?? e?.message ?? String(err);
  return scrubUrl(msg, url).slice(0, 300);
}

/**
 * Why a notification was given up on, as /metrics names it (hookwatch_notification_failures_total{reason}), in the
 * words of the alert events' failures: refused_3xx (a redirect, not followed), refused_4xx, refused_5xx (the status
 * its last attempt was answered), unreachable (no connection made, or it was closed before the answer), timeout
 * (no answer within the receiver's timeout, or the connection timed out), tls (the handshake failed), other (an
 * answer too large to read).
 */
export const NOTIFICATION_FAILURE_REASONS = ['refused_3xx', 'refused_4xx', 'refused_5xx', 'unreachable', 'timeout', 'tls', 'other'] as const;
export type NotificationFailureReason = (typeof NOTIFICATION_FAILURE_REASONS)[number];

/** Codes (describeError's, in its words or stored bare before them) that mean no connection could be made or kept. */
export const UNREACHABLE_CODES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNABORTED', 'UND_ERR_SOCKET']);
/**
 * describeError's codes of timeouts: fetch's own (connecting, the answer's headers or body), and the system's, a
 * connection that had no answer from the other end (ETIMEDOUT).
 */
const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);

/**
 * describeError's codes of answers fetch cannot read, which the receiver would give every time: not retried, as
 * OpenTelemetry's OTLP/HTTP exporters retry no network error but a lost or refused connection or a timeout.
 * Headers over Node's 16 KiB (`--max-http-header-size`): a proxy in front of the receiver adding cookies, say.
 */
const UNREADABLE_ANSWER_CODES = new Set(['UND_ERR_HEADERS_OVERFLOW']);

/** The reason of a delivery that failed, from its last attempt's status and error. */
export function failureReason(result: Pick<SendResult, 'httpStatus' | 'error'>): NotificationFailureReason {
  const status = result.httpStatus;
  if (status !== null && status >= 300) return status >= 500 ? 'refused_5xx' : status >= 400 ? 'refused_4xx' : 'refused_3xx';
  const error = result.error ?? '';
  if (error.startsWith(TLS_FAILURE_PREFIX)) return 'tls';
  // The error as describeError wrote it, `; gave up: ...` after it when the deadline ended the retries: in words
  // with its code in them (`connection refused (ECONNREFUSED): ...`, `timed out after 10 s: ...`), or, stored
  // before those words, the code bare (`ECONNREFUSED`, `timed out`).
  const cause = error.split(';')[0] ?? '';
  const code = networkErrorCode(cause) ?? '';
  if (cause === 'timed out' || cause.startsWith('timed out after ') || TIMEOUT_CODES.has(code)) return 'timeout';
  return UNREACHABLE_CODES.has(code) ? 'unreachable' : 'other';
}

/** Removes a URL and its path/query from a message. */
export function scrubUrl(text: string, url: string): string {
  let out = text.split(url).join('<url>');
  try {
    const u = new URL(url);
    const tail = u.pathname + u.search;
    if (tail.length > 1) out = out.split(tail).join('<path>');
  } catch {
    // Not a URL: nothing more to remove.
  }
  return out;
}

/**
 * The most of an answer's body read, and the longest it is waited for, before it is cancelled; past either,
 * reusing the connection is not worth the wait.
 */
const MAX_DRAIN_BYTES = 64 * 1024;
const MAX_DRAIN_MS = 1000;

/**
 * Reads the answer's body and throws it away, so the connection can be reused; its content is not needed. A body
 * longer than MAX_DRAIN_BYTES (a URL that is a download, an event stream), or not over within MAX_DRAIN_MS (a
 * receiver gone quiet after its status), is cancelled there, closing the connection: neither held in memory nor
 * waited for until the attempt's timeout, which would hold the receiver's next notifications as long.
 */
async function drain(res: Response): Promise<void> {
  const reader = res.body?.getReader();
  if (!reader) return;
  const timer = setTimeout(() => void reader.cancel().catch(() => {}), MAX_DRAIN_MS);
  try {
    for (let read = 0; read <= MAX_DRAIN_BYTES;) {
      const { done, value } = await reader.read();
      if (done) return;
      read += value.byteLength;
    }
    await reader.cancel();
  } catch {
    // Timed out or cut off while read: the status is what counts.
  } finally {
    clearTimeout(timer);
  }
}

/** One POST of `req`: its answer's status and Retry-After, or why it had none. */
async function post(req: OutgoingRequest, opts: SendOptions, now: () => number): Promise<{ status: number | null; error: string | null; retryAfter: number | undefined }> {
  const { url, timeoutMs, tls } = req.target ?? opts;
  try {
    const timeout = AbortSignal.timeout(timeoutMs);
    const res = await fetch(url, {
      method: 'POST',
      // hookwatch/<version>, as Alertmanager sends Alertmanager/<version>: a receiver's logs tell the release. A
      // User-Agent in the receiver's headers, in any case, replaces it rather than joining it.
      headers: { 'content-type': 'application/json', ...(Object.keys(req.headers).some((h) => h.toLowerCase() === 'user-agent') ? {} : { 'user-agent': USER_AGENT }), ...req.headers },
      body: req.body,
      redirect: 'manual',
      signal: opts.signal ? AbortSignal.any([timeout, opts.signal]) : timeout,
      ...(tls ? { dispatcher: tlsDispatcher(tls) } : {}),
    } as RequestInit);
    const status = res.status;
    const retryAfter = parseRetryAfter(res.headers.get('retry-after'), now());
    await drain(res);
    return { status, error: status < 200 || status >= 300 ? `HTTP ${status}` : null, retryAfter };
  } catch (err) {
    return { status: null, error: opts.signal?.aborted ? 'aborted' : describeError(err, url, timeoutMs), retryAfter: undefined };
  }
}

/** POSTs until delivered, permanently refused, past the deadline, or aborted. */
export async function sendWithRetry(build: (attempt: number) => OutgoingRequest, opts: SendOptions): Promise<SendResult> {
  const now = opts.now ?? Date.now;
  const random = opts.random ?? Math.random;
  const sleep = opts.sleep ?? abortableSleep;
  const base = opts.baseDelayMs ?? 500;
  const cap = opts.maxDelayMs ?? 30_000;
  let lastStatus: number | null = null;
  let lastError: string | null = null;
  for (let attempt = 1; ; attempt++) {
    if (opts.signal?.aborted) return { outcome: 'aborted', attempts: attempt - 1, httpStatus: lastStatus, error: lastError };
    let unasked: string | null = null;
    if (opts.proceed) {
      try {
        if (!(await opts.proceed())) return { outcome: 'aborted', attempts: attempt - 1, httpStatus: lastStatus, error: lastError };
      } catch (err) {
        // Not an answer that it may not go: nothing is sent this time, and the attempt is retried with the backoff.
        unasked = `${NOT_SENT_PREFIX}${(err as Error)?.message ?? String(err)}`.slice(0, 300);
      }
    }
    const atMs = now();
    const started = performance.now();
    // Built (rendered, signed) only when it goes out: one not sent is timed as such, with no request.
    const answer = unasked === null ? await post(build(attempt), opts, now) : { status: null, error: unasked, retryAfter: undefined };
    const { status, retryAfter } = answer;
    let error = answer.error;
    const durationMs = Math.round(performance.now() - started);
    lastStatus = status;
    lastError = error;
    const delivered = status !== null && status >= 200 && status < 300;
    const retryable = !delivered && (unasked !== null || (status === null ? !UNREADABLE_ANSWER_CODES.has(networkErrorCode(error ?? '') ?? '') : isRetryableStatus(status)));
    let wait = retryable ? fullJitterBackoff(attempt, { baseMs: base, capMs: cap, multiplier: 2 }, random) : 0;
    if (retryable && retryAfter !== undefined) wait = Math.max(wait, retryAfter);
    const giveUp = !delivered && (!retryable || now() + wait > opts.deadlineMs || attempt >= (opts.maxAttempts ?? Infinity) || opts.signal?.aborted === true);
    if (giveUp && retryable && !opts.signal?.aborted) {
      error = attempt >= (opts.maxAttempts ?? Infinity) ? error : `${error}; gave up: the next attempt would pass the delivery deadline`;
    }
    const outcome: AttemptResult['outcome'] = delivered ? 'delivered' : giveUp ? 'failed' : 'retrying';
    if (!(opts.signal?.aborted && !delivered)) opts.onAttempt?.({ attempt, atMs, outcome, httpStatus: status, error, durationMs });
    if (delivered) return { outcome: 'delivered', attempts: attempt, httpStatus: status, error: null };
    if (opts.signal?.aborted) return { outcome: 'aborted', attempts: attempt, httpStatus: status, error };
    if (giveUp) return { outcome: 'failed', attempts: attempt, httpStatus: status, error };
    await sleep(wait, opts.signal);
  }
}
