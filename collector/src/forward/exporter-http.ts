/**
 * OTLP/HTTP exporter: POST {endpoint}/v1/{signal} (appended to the endpoint's path, its query kept) with the body
 * exactly as received, in the encoding it arrived in (hookwatch never transcodes, so the content downstream is the
 * content the client sent), gzip-compressed when configured. 408/429/502/503/504, timeouts and network errors are retryable without limit, as the
 * specification says ("OTLP/HTTP Throttling" and "Failures"). 401, 403, 404 and other 5xx are retried too, within
 * forward.retry.maxElapsedTime: an expired key, a load balancer without its backends or a deploy in progress
 * answer that way. The specification (and the OpenTelemetry Collector) drop them at once; hookwatch keeps the
 * data until then (docs/forwarding.md). A failed TLS handshake and a redirect (3xx, never followed: a POST
 * redirected with 301/302/303 arrives as a GET without its body) are retried the same way, and so is an answer that
 * cannot be read (headers over undici's limit, bytes that are not HTTP): unlike a network error, it comes after the
 * request arrived, and the next attempt gets the same. Retry-After is honoured on every retried answer. Other
 * 4xx (400, 413, 415...) are permanent. An https:// endpoint speaks TLS with forward.tls.* (CA, client
 * certificate, server name), a new connection pool taking rotated files.
 */
import { maxHeaderSize } from 'node:http';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { decodePartialSuccess, namedEncoding, refusalText, type Encoding } from '../otlp/encode.ts';
import { parseRetryAfter } from '../net/backoff.ts';
import { tlsFailure, type ClientTlsCredentials } from '../net/tls.ts';
import { ClientTlsAgent } from '../net/tls-agent.ts';
import { otlpSignalUrl, safeEndpoint } from '../net/otlp-url.ts';
import { secretScrubber } from '../net/endpoint-secrets.ts';
import type { Signal } from '../pipeline/consumer.ts';
import { scrubbedResult, type ExportItem, type ExportResult, type Exporter } from './exporter.ts';
import { hostPort, networkErrorWords } from '../../../shared/src/network-error.ts';

const gzipAsync = promisify(gzip);

export interface HttpExporterOptions {
  /** Base URL as in OTEL_EXPORTER_OTLP_ENDPOINT, e.g. http://collector:4318; the signal path is appended. */
  endpoint: string;
  protocol: 'http/protobuf' | 'http/json';
  headers: Record<string, string>;
  compression: 'gzip' | 'none';
  timeoutMs: number;
  /** forward.tls.*: a CA, a client certificate, the server name; absent for the system's defaults. */
  tls?: ClientTlsCredentials;
  now?: () => number;
}

const RETRYABLE_STATUS = new Set([408, 429, 502, 503, 504]);
/**
 * A connection reset or closed before the answer (undici's UND_ERR_SOCKET: "other side closed"): unlike a refused
 * connection, the destination or a proxy in front of it took the connection and then dropped the request.
 */
const CUT_OFF_CODES = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET']);

/**
 * An answer undici cannot read: headers over its limit (16 KiB), or bytes that are not HTTP/1.1. The destination
 * (or a proxy in front of it) got the request, and may have taken it.
 */
function unreadableAnswer(cause: { code?: string; name?: string; message?: string } | undefined): string | undefined {
  if (cause?.code === 'UND_ERR_HEADERS_OVERFLOW') return `${cause.code}: headers over the ${Math.round(maxHeaderSize / 1024)} KiB read`;
  if (cause?.name === 'HTTPParserError') return `${cause.code ?? cause.name}: ${cause.message}`;
  return undefined;
}
/**
 * Refusals that are often fixed by an operator within hours: retried for a bounded time. A redirect is one: the
 * endpoint moved (or is a login page), and forward.endpoint must say where to.
 */
const MAYBE_PERMANENT = (status: number): boolean => (status >= 300 && status <= 399) || status === 401 || status === 403 || status === 404 || (status >= 500 && status <= 599);

/** Where a redirect points, without credentials or query (they may hold a key), for messages. */
function redirectTarget(location: string | null, base: string): string {
  if (!location) return 'no Location';
  try {
    return safeEndpoint(new URL(location, base).toString());
  } catch {
    return 'an unparsable Location';
  }
}

/**
 * How much of a response body is read, as the OpenTelemetry Collector's otlphttp exporter does (64 KiB): an
 * ExportLogsServiceResponse or a google.rpc.Status is far smaller.
 */
export const MAX_RESPONSE_BYTES = 64 * 1024;

/** The first `limit` bytes of a response body; the rest is not read (the connection is then closed). */
async function readAtMost(res: Response, limit: number): Promise<Buffer> {
  const reader = res.body?.getReader();
  if (!reader) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    while (size < limit) {
      const { done, value } = await reader.read();
      if (done) return Buffer.concat(chunks);
      chunks.push(Buffer.from(value.buffer, value.byteOffset, value.byteLength));
      size += value.byteLength;
    }
    await reader.cancel().catch(() => undefined);
  } catch {
    // Cut off or timed out mid-body: what arrived is all there is.
  }
  return Buffer.concat(chunks).subarray(0, limit);
}

/**
 * What a refusal says when the start read of its answer gave no reason (a google.rpc.Status whose message comes
 * after 64 KiB of details): that the answer was too long, rather than nothing.
 */
function notRead(start: Buffer, contentLength: string | null): string {
  if (start.length < MAX_RESPONSE_BYTES) return '';
  const size = contentLength && /^\d+$/.test(contentLength) ? `${contentLength} bytes` : 'its size not given';
  return `reason not read: the answer is over the ${MAX_RESPONSE_BYTES / 1024} KiB read (${size})`;
}

export class HttpExporter implements Exporter {
  readonly description: string;
  readonly timeoutMs: number;
  private readonly opts: HttpExporterOptions;
  /** The URL of each signal: the endpoint's path + /v1/{signal}, its query (an API key, say) kept. */
  private readonly urls: Record<Signal, string>;
  private readonly basicAuth: string | undefined;
  /** The connection pool for forward.tls, made again when its files change. */
  private readonly agent: ClientTlsAgent | undefined;
  /** Takes the endpoint's credentials, query and header values out of what the destination answers. */
  readonly scrub: (text: string) => string;

  constructor(opts: HttpExporterOptions) {
    this.opts = opts;
    // fetch refuses URLs with credentials: user:password@ in the endpoint becomes Basic authorization.
    const url = new URL(opts.endpoint);
    this.basicAuth = url.username || url.password ? `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}` : undefined;
    url.username = '';
    url.password = '';
    this.urls = { logs: otlpSignalUrl(url, 'logs'), metrics: otlpSignalUrl(url, 'metrics'), traces: otlpSignalUrl(url, 'traces') };
    this.description = `${safeEndpoint(opts.endpoint)} (${opts.protocol})`;
    // The headers as sent: forward.headers' authorization, when it sets one, goes instead of the endpoint's.
    this.scrub = secretScrubber(opts.endpoint, { ...(this.basicAuth ? { authorization: this.basicAuth } : {}), ...opts.headers }, Object.values(this.urls));
    this.timeoutMs = opts.timeoutMs;
    this.agent = opts.tls ? new ClientTlsAgent(opts.tls) : undefined;
  }

  accepts(_encoding: Encoding): boolean {
    return true;
  }

  async export(item: ExportItem, signal?: AbortSignal): Promise<ExportResult> {
    return scrubbedResult(await this.attempt(item, signal), this.scrub);
  }

  private async attempt(item: ExportItem, signal?: AbortSignal): Promise<ExportResult> {
    const now = this.opts.now ?? Date.now;
    const headers: Record<string, string> = {
      ...(this.basicAuth ? { authorization: this.basicAuth } : {}),
      ...this.opts.headers,
      'content-type': item.encoding === 'json' ? 'application/json' : 'application/x-protobuf',
    };
    let body = item.body;
    if (this.opts.compression === 'gzip') {
      body = await gzipAsync(item.body);
      headers['content-encoding'] = 'gzip';
    }
    let res: Response;
    try {
      const timeout = AbortSignal.timeout(this.opts.timeoutMs);
      const dispatcher = this.agent?.dispatcher();
      // Redirects are not followed: fetch would resend a POST answered 301, 302 or 303 as a GET without the body,
      // and a login page answering it 200 would count as delivered. Nor 307/308: the key in forward.headers would
      // go wherever the answer points.
      res = await fetch(this.urls[item.signal], { method: 'POST', headers, body: body as Uint8Array<ArrayBuffer>, redirect: 'manual', signal: signal ? AbortSignal.any([timeout, signal]) : timeout, ...(dispatcher ? { dispatcher } : {}) } as RequestInit);
    } catch (err) {
      if (signal?.aborted) return { kind: 'retryable', message: `${this.description} had not answered when hookwatch stopped` };
      // Network errors and timeouts: the request may or may not have arrived; sending again is at-least-once.
      const cause = (err as { cause?: { code?: string; name?: string; message?: string } }).cause;
      if ((err as Error).name === 'TimeoutError') return { kind: 'retryable', message: `cannot reach ${this.description}: no answer within ${this.opts.timeoutMs} ms`, timedOut: true };
      // Nothing was sent: the handshake failed. Retried for forward.retry.maxElapsedTime, like a refused key.
      const tls = tlsFailure(cause);
      if (tls) return { kind: 'retryable', message: `TLS with ${this.description} failed: ${tls}`, bounded: true, tls: true };
      // An answer came that cannot be read, and the same request will likely get the same answer: sent again (at
      // least once), but only for forward.retry.maxElapsedTime, as each attempt may be one more copy downstream.
      const unreadable = unreadableAnswer(cause);
      if (unreadable) return { kind: 'retryable', message: `${this.description} answered what is not HTTP hookwatch can read (${unreadable})`, bounded: true };
      const code = cause?.code;
      const message = `cannot reach ${this.description}: ${(code && networkErrorWords(code, hostPort(this.opts.endpoint))) ?? code ?? cause?.message ?? (err as Error).message}`;
      return CUT_OFF_CODES.has(cause?.code ?? '') ? { kind: 'retryable', message, cutOff: true } : { kind: 'retryable', message };
    }
    // The body says what was rejected, or why the request was. Only its start is read: a destination (or a
    // proxy in front of it) answering with a large or endless body must not fill hookwatch's memory.
    const raw = await readAtMost(res, MAX_RESPONSE_BYTES);
    const type = res.headers.get('content-type') ?? '';
    if (res.ok) {
      // A partial success is read only in the encoding the answer names, as the OpenTelemetry Collector's otlphttp
      // exporter does: without a content type (or with another) the body is not guessed at.
      const named = namedEncoding(type);
      const partial = named ? decodePartialSuccess(named, raw) : undefined;
      return partial ? { kind: 'success', partial } : { kind: 'success' };
    }
    // Why it was refused: worth a guess in the request's encoding when the answer names none. Scrubbed before it
    // is cut, so that a key across the cut does not leave its first half.
    const text = this.scrub(refusalText(type, raw, item.encoding) || notRead(raw, res.headers.get('content-length')));
    const redirect = res.status >= 300 && res.status <= 399;
    const message = redirect
      ? `${this.description} answered ${res.status}, a redirect to ${redirectTarget(res.headers.get('location'), this.urls[item.signal])}; redirects are not followed (the request is not delivered): set forward.endpoint to where the destination is now`
      : `${this.description} answered ${res.status}${text ? `: ${text.slice(0, 200)}` : ''}`;
    const bounded = !RETRYABLE_STATUS.has(res.status);
    if (!bounded || MAYBE_PERMANENT(res.status)) {
      const retryAfterMs = parseRetryAfter(res.headers.get('retry-after'), now());
      return { kind: 'retryable', message, status: res.status, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}), ...(bounded ? { bounded } : {}) };
    }
    return { kind: 'permanent', message, status: res.status, ...(res.status === 413 ? { tooLarge: true } : {}) };
  }

  async close(): Promise<void> {
    await this.agent?.destroy();
  }
}
