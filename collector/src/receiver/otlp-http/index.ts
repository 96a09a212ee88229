/**
 * OTLP/HTTP receiver (opentelemetry-proto specification, "OTLP/HTTP"): POST /v1/logs, /v1/metrics and
 * /v1/traces in application/x-protobuf or application/json, gzip accepted, answers in the request's encoding.
 * Plain node:http (node:https with otlp.tls) rather than Express: the receiver needs exact control of body
 * limits and status codes.
 */
import { createServer, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { splitAddr } from '../../net/addr.ts';
import { JsonThread } from '../../otlp/json-thread.ts';
import { validatePassThroughSteps } from '../../otlp/validate.ts';
import { RpcCode, encodeExportResponse, encodeStatus, type Encoding } from '../../otlp/encode.ts';
import type { Signal } from '../../pipeline/consumer.ts';
import { UnauthenticatedError, UnsupportedMediaTypeError, mapError } from '../../pipeline/errors.ts';
import { echoed } from '../../request-error.ts';
import { closeServer, trackConnections } from '../../net/close-server.ts';
import { CLOSE_AFTER_UNREAD_BODIES } from '../../net/unread-body.ts';
import { authCredentials, onlyAuthorization, sameSecret, secretDigest } from '../../net/secret.ts';
import { ClientAbortedError, readBody } from './body.ts';
import { RequestTooSlowError } from '../body-rate.ts';
import { WRONG_PROTOCOL_LOG_INTERVAL_MS, type OtlpReceiverOptions, type ReceiverStats, type RejectReason } from '../options.ts';
import { ThrottledLine } from '../../telemetry/throttled-line.ts';
import { OtlpRefusals, endpointHint } from '../refusals.ts';
import { isNavigation } from '../../net/navigation.ts';
import { decodeLogs, decodeWithin } from '../inflight.ts';
import { hostCheck, requestHost, targetPath } from '../../net/allowed-hosts.ts';
import { handshakeTimeout, slowClientLimits } from '../../net/slow-clients.ts';
import { answerPlainHttp } from '../../net/plain-http-on-tls.ts';
import { KEEP_ALIVE_TIMEOUT_MS } from '../../net/settings.ts';
import { answerParserRefusals, malformedMessage, parserRefusal, refusalStatus, type ParserRefusal } from '../../net/parser-refusals.ts';
import { HOST_CHECKED_BY_PORT, answerServerRefusals, type ServerRefusal } from '../../net/server-refusals.ts';

/** The HTTP/2 connection preface (RFC 9113 section 3.4), which a gRPC client sends first. */
const HTTP2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

const PATHS: Record<string, Signal> = { '/v1/logs': 'logs', '/v1/metrics': 'metrics', '/v1/traces': 'traces' };
const REJECTED_FIELD: Record<Signal, string> = { logs: 'rejectedLogRecords', metrics: 'rejectedDataPoints', traces: 'rejectedSpans' };

function mediaType(header: string | undefined): Encoding | undefined {
  const [type, ...params] = (header ?? '').split(';').map((p) => p.trim().toLowerCase());
  if (type === 'application/x-protobuf' || type === 'application/protobuf') return 'protobuf';
  if (type === 'application/json') {
    // JSON is UTF-8 (RFC 8259); a body declared in another charset would be read wrong, so it is refused.
    const charset = params.find((p) => p.startsWith('charset='))?.slice('charset='.length).replace(/^"|"$/g, '');
    return charset === undefined || charset === 'utf-8' || charset === 'utf8' ? 'json' : undefined;
  }
  return undefined;
}

/** The encoding of the answer to a request: its own, JSON when it is not OTLP (such as a person's curl). */
function answerEncoding(req: IncomingMessage): Encoding {
  return mediaType(req.headers['content-type']) ?? 'json';
}

function contentType(encoding: Encoding): string {
  return encoding === 'json' ? 'application/json' : 'application/x-protobuf';
}

/**
 * The google.rpc.Status for each request the HTTP parser refuses; a malformed one is INVALID_ARGUMENT, saying what
 * the parser found wrong. The statuses stay Node's (431, 413, 408, 400), and with them what an exporter does next:
 * OTLP retries only 429, 502, 503 and 504.
 */
const PARSER_REFUSALS: Record<Exclude<ParserRefusal, 'malformed'>, [number, string]> = {
  header_overflow: [RpcCode.RESOURCE_EXHAUSTED, 'the request line and headers are larger than 16 KiB'],
  chunk_extensions_overflow: [RpcCode.RESOURCE_EXHAUSTED, 'chunk extensions larger than 16 KiB'],
  request_timeout: [RpcCode.DEADLINE_EXCEEDED, 'the request was not received in full within otlp.requestTimeout'],
};

/**
 * The status, google.rpc.Code and counted reason of each request Node's server would refuse itself. CONNECT, from a
 * client taking the port for a proxy, is refused as any method but POST. A transfer coding other than chunked is
 * counted as a Content-Encoding the receiver does not inflate, and is UNIMPLEMENTED as such a grpc-encoding is.
 */
const SERVER_REFUSALS: Record<ServerRefusal, [number, number, RejectReason]> = {
  expectation_failed: [417, RpcCode.INVALID_ARGUMENT, 'expectation_failed'],
  bad_request: [400, RpcCode.INVALID_ARGUMENT, 'malformed'],
  not_implemented: [501, RpcCode.UNIMPLEMENTED, 'unsupported_media_type'],
  connect: [405, RpcCode.UNIMPLEMENTED, 'method_not_allowed'],
};

/** Text in HTML. */
function html(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/**
 * What a browser opened at a path of this port that serves no signal shows (404 still): that this is where
 * exporters send telemetry, not a web page, and where the dashboard is when hookwatch knows (`dashboardUrl`:
 * alerting.externalUrl, else the HTTP port's address). Plain HTML, no script, style or image, as the HTTP port's
 * pages for a browser are.
 */
function receiverPage(dashboardUrl: string): string {
  const where = dashboardUrl
    ? `<p>The dashboard is at <a href="${html(dashboardUrl)}">${html(dashboardUrl)}</a>.</p>`
    : '<p>The dashboard is on hookwatch\'s HTTP port (<code>http.addr</code>, 8080 unless <code>HOOKWATCH_HTTP_ADDR</code> says otherwise; hookwatch logs it at start).</p>';
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>hookwatch: this is the OTLP receiver port</title></head>
<body>
<h1>This is hookwatch's OTLP receiver port</h1>
<p>OpenTelemetry exporters (Claude Code's among them) send telemetry here: <code>POST /v1/logs</code>, <code>/v1/metrics</code> and <code>/v1/traces</code>. Set <code>OTEL_EXPORTER_OTLP_ENDPOINT</code> to this port's base URL, without a path: the exporter appends <code>/v1/logs</code> itself.</p>
${where}
</body>
</html>
`;
}

export class OtlpHttpReceiver {
  readonly stats: ReceiverStats = { requests: {}, rejected: {} };
  private readonly server: Server;
  private readonly opts: OtlpReceiverOptions;
  private readonly tokenDigest: Buffer | undefined;
  /** A web page reaching this port through a name rebound to 127.0.0.1 could send telemetry: refused. */
  private readonly hostRefusal: (host: string | undefined) => string | undefined;
  /** gRPC clients, logged: the exporter itself reads only a refused connection, and /metrics only a count. */
  private readonly grpcClients: ThrottledLine;
  /** Where a large OTLP/JSON body is parsed, off the event loop: the one given, or the receiver's own. */
  private readonly json: JsonThread;
  /** Refusals logged and kept for the overview: the ones given, or the receiver's own. */
  private readonly refusals: OtlpRefusals;
  private port = 0;

  /** The port it listens on once started; undefined before. */
  get boundPort(): number | undefined {
    return this.port || undefined;
  }

  constructor(opts: OtlpReceiverOptions) {
    this.opts = opts;
    this.json = opts.jsonThread ?? new JsonThread({ maxRequestBytes: opts.maxRequestBytes });
    this.refusals = opts.refusals ?? new OtlpRefusals({ logger: opts.logger });
    this.grpcClients = new ThrottledLine(WRONG_PROTOCOL_LOG_INTERVAL_MS, () => performance.now(), (connections) => {
      opts.logger.warn('otlp http: an OTLP/gRPC client connected; a gRPC exporter (OTEL_EXPORTER_OTLP_PROTOCOL=grpc) goes to the OTLP/gRPC port (otlp.grpc.addr, 4317 by default), an OTLP/HTTP one to this port needs OTEL_EXPORTER_OTLP_PROTOCOL http/protobuf or http/json', { port: this.port, connections });
    });
    this.tokenDigest = opts.ingestToken ? secretDigest(opts.ingestToken) : undefined;
    this.hostRefusal = hostCheck({ addr: opts.addr, allowedHosts: opts.allowedHosts ?? [] });
    const options: ServerOptions = { ...slowClientLimits(opts.requestTimeoutMs), ...CLOSE_AFTER_UNREAD_BODIES, ...HOST_CHECKED_BY_PORT };
    const listener = (req: IncomingMessage, res: ServerResponse): void => {
      this.handle(req, res).catch((err: unknown) => {
        opts.logger.error('otlp request failed unexpectedly', { err });
        if (!res.headersSent) this.fail(res, 'json', 500, RpcCode.INTERNAL, 'internal error');
      });
    };
    const tls = opts.tls;
    if (tls) {
      const handshakeTimeoutMs = handshakeTimeout(opts.requestTimeoutMs);
      const server = createHttpsServer({ ...options, ...tls.serverOptions(), handshakeTimeout: handshakeTimeoutMs });
      // An exporter given http:// for this port reads 400 saying to use https://, not a reset it retries.
      answerPlainHttp(server, { section: tls.config.section, handshakeTimeoutMs, onPlain: (socket) => opts.handshakes?.plainHttp('otlp_http', socket), onFailed: (socket, error) => opts.handshakes?.failedBeforeHandshake('otlp_http', socket, error) });
      // A rotated certificate serves the connections made from now on.
      tls.onChange((context) => server.setSecureContext(context));
      opts.handshakes?.watch('otlp_http', server);
      this.server = trackConnections(server);
    } else {
      this.server = trackConnections(createServer(options));
    }
    // What Node's server would answer itself, with an empty body or not at all: a google.rpc.Status, counted.
    answerServerRefusals(this.server, listener, 'method CONNECT not allowed; use POST on /v1/logs, /v1/metrics or /v1/traces', (refusal, req, message) => {
      const [status, code, reason] = SERVER_REFUSALS[refusal];
      this.refuse(reason, req);
      const encoding = answerEncoding(req);
      return { status, contentType: contentType(encoding), body: encodeStatus(encoding, code, message), ...(refusal === 'connect' ? { headers: { allow: 'POST' } } : {}) };
    });
    this.server.keepAliveTimeout = opts.keepAliveTimeoutMs ?? KEEP_ALIVE_TIMEOUT_MS;
    // An exporter reads a google.rpc.Status in its request's encoding, as for the receiver's own refusals; when the
    // headers could not be read, in protobuf, OTLP/HTTP's default encoding (and the one the Go exporter decodes).
    // Counted under the refusal's own name; a request whose headers were read is counted by its handler.
    answerParserRefusals(this.server, (refusal, req, err) => {
      const encoding = req ? answerEncoding(req) : 'protobuf';
      const [code, message] = refusal === 'malformed' ? [RpcCode.INVALID_ARGUMENT, malformedMessage(err)] : PARSER_REFUSALS[refusal];
      return { contentType: contentType(encoding), body: encodeStatus(encoding, code, message) };
    }, (refusal, err, socket) => {
      // HTTP/2's connection preface, which a gRPC client sends first: an exporter set to the other protocol, logged as such.
      const grpcClient = Buffer.isBuffer(err.rawPacket) && err.rawPacket.subarray(0, HTTP2_PREFACE.length).equals(HTTP2_PREFACE);
      this.refuse(refusal, undefined, grpcClient ? 'a gRPC exporter goes to the OTLP/gRPC port; an OTLP/HTTP one to this port needs OTEL_EXPORTER_OTLP_PROTOCOL http/protobuf or http/json' : undefined, (socket as { remoteAddress?: string }).remoteAddress, grpcClient);
      if (grpcClient) this.grpcClients.note();
    });
  }

  /** Starts listening; resolves with the bound address (port 0 picks a free port). */
  async start(): Promise<AddressInfo> {
    const { host, port } = splitAddr(this.opts.addr);
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    const address = this.server.address() as AddressInfo;
    this.port = address.port;
    return address;
  }

  /** Stops accepting, lets in-flight requests finish, then stops its own JSON parser thread. Safe to call twice or before start. */
  async shutdown(): Promise<void> {
    this.grpcClients.flush();
    this.refusals.flush();
    await closeServer(this.server);
    if (!this.opts.jsonThread) await this.json.close();
  }

  private count<K extends string>(map: Partial<Record<K, number>>, key: K): void {
    map[key] = (map[key] ?? 0) + 1;
  }

  /** A request refused: counted for /metrics, logged (throttled) and kept for the overview (refusals.ts). */
  private refuse(reason: RejectReason, req: IncomingMessage | undefined, hint?: string, client = req?.socket.remoteAddress, logged = false, problem?: string): void {
    this.count(this.stats.rejected, reason);
    this.refusals.note('http', reason, { path: req ? targetPath(req.url ?? '/') : undefined, client, problem }, hint, logged);
  }

  private fail(res: ServerResponse, encoding: Encoding, status: number, code: number, message: string, headers: Record<string, string> = {}): void {
    const body = encodeStatus(encoding, code, message);
    res.writeHead(status, {
      'content-type': contentType(encoding),
      'content-length': body.length,
      ...headers,
    });
    res.end(body);
  }

  private authorized(req: IncomingMessage): boolean {
    if (!this.tokenDigest) return true;
    // Compare digests so the time taken does not depend on where a wrong token differs, nor on its length.
    return sameSecret(authCredentials(onlyAuthorization(req), 'bearer') ?? '', this.tokenDigest);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = targetPath(req.url ?? '/');
    const signal = PATHS[path];
    const encoding = mediaType(req.headers['content-type']);
    const answerIn = answerEncoding(req);
    if (!signal) {
      const hint = endpointHint(path, req.method, `${this.opts.tls ? 'https' : 'http'}://<host>:${req.socket.localPort ?? ''}`);
      // The icon a browser asks for after the page below is answered as any path this port does not serve, but is
      // no client's refusal to count, log or list.
      const icon = path === '/favicon.ico' && (req.method === 'GET' || req.method === 'HEAD');
      if (!icon) this.refuse('not_found', req, hint);
      if ((req.method === 'GET' || req.method === 'HEAD') && isNavigation(req.headers)) {
        // A person's browser: a page saying what this port is, not a google.rpc.Status it would show as text.
        const page = Buffer.from(receiverPage(this.opts.dashboardUrl?.() ?? ''));
        // As the API port's pages (api/same-origin.ts hardeningHeaders): kept by no cache, framed by no page.
        res.writeHead(404, {
          'content-type': 'text/html; charset=utf-8',
          'content-length': page.length,
          'cache-control': 'no-store',
          'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
          'x-content-type-options': 'nosniff',
          'x-frame-options': 'DENY',
          'referrer-policy': 'no-referrer',
        });
        res.end(req.method === 'HEAD' ? undefined : page);
        req.resume();
        return;
      }
      this.fail(res, answerIn, 404, RpcCode.UNIMPLEMENTED, `no OTLP endpoint at ${echoed(path)}; use /v1/logs, /v1/metrics or /v1/traces${hint ? ` (${hint})` : ''}`);
      req.resume();
      return;
    }
    const refusal = this.hostRefusal(requestHost(req));
    if (refusal !== undefined) {
      this.refuse('host_not_allowed', req);
      this.fail(res, answerIn, 403, RpcCode.PERMISSION_DENIED, refusal);
      req.resume();
      return;
    }
    if (req.method !== 'POST') {
      this.refuse('method_not_allowed', req);
      this.fail(res, answerIn, 405, RpcCode.UNIMPLEMENTED, `method ${req.method} not allowed on ${path}; use POST`, { allow: 'POST' });
      req.resume();
      return;
    }
    const account = this.opts.inflight.open();
    try {
      // Authentication comes before a byte of the body is read or inflated.
      if (!this.authorized(req)) throw new UnauthenticatedError('missing or wrong bearer token (Authorization: Bearer <token>)');
      if (!encoding) {
        throw new UnsupportedMediaTypeError(`Content-Type ${echoed(req.headers['content-type'] ?? '')} is not supported; use application/x-protobuf or application/json (UTF-8)`);
      }
      // A stage that can take nothing now (the store not open yet) refuses before the body is read: the connection
      // then closes after the answer, as for every refusal of an unread body (net/unread-body.ts).
      (signal === 'logs' ? this.opts.logs : this.opts.passThrough).admitUnread?.();
      const body = await readBody(req, this.opts.maxRequestBytes, account, this.opts.requestTimeoutMs);
      const rawRequest = { signal, body, encoding, receivedAtMs: Date.now() };
      let rejected = 0;
      let message = '';
      if (signal === 'logs') {
        this.opts.logs.admit?.(rawRequest);
        const decoded = await decodeWithin(account, this.opts.inflight, (bound) => decodeLogs(encoding, body, bound, this.json, this.opts.logs.eventNames));
        ({ rejected, message } = await this.opts.logs.consumeLogs(decoded, rawRequest));
      } else {
        this.opts.passThrough.admit?.(rawRequest);
        await decodeWithin(account, this.opts.inflight, (bound) => validatePassThroughSteps(rawRequest, bound, this.json));
        await this.opts.passThrough.consume(rawRequest);
      }
      const out = encodeExportResponse(encoding, rejected, message, REJECTED_FIELD[signal]);
      this.count(this.stats.requests, `${signal}:ok`);
      res.writeHead(200, { 'content-type': contentType(encoding), 'content-length': out.length });
      res.end(out);
    } catch (err) {
      if (err instanceof ClientAbortedError) {
        // The body ended early. Either the parser refused it (cut off at otlp.requestTimeout, counted as the gRPC
        // receiver counts its own; chunked framing it cannot read), and the refusal's status was answered, or the
        // client gave up on it: not a bad request either, and no answer can reach it.
        const refused = parserRefusal(req.socket.errored);
        this.count(this.stats.requests, `${signal}:${refused ? refusalStatus(refused) : 499}`);
        this.refuse(refused ?? 'client_aborted', req);
        return;
      }
      if (err instanceof RequestTooSlowError) {
        // Answered 503 with Retry-After (UNAVAILABLE), which OTLP clients retry (a 408 they drop), its body left
        // unread: the connection closes after the answer, and the request's reservation is given back now, not at
        // otlp.requestTimeout.
        this.count(this.stats.requests, `${signal}:503`);
        this.refuse('request_too_slow', req);
        this.fail(res, answerIn, 503, RpcCode.UNAVAILABLE, err.message, { 'retry-after': String(err.retryAfterSeconds) });
        return;
      }
      const m = mapError(err);
      this.count(this.stats.requests, `${signal}:${m.httpStatus}`);
      this.refuse(m.reason, req, undefined, undefined, false, m.reason === 'bad_request' ? m.message : undefined);
      if (m.httpStatus === 500) this.opts.logger.error('otlp request failed', { signal, err });
      const headers: Record<string, string> = {};
      if (m.retryAfterSeconds !== undefined) headers['retry-after'] = String(m.retryAfterSeconds);
      if (m.httpStatus === 401) headers['www-authenticate'] = 'Bearer';
      this.fail(res, answerIn, m.httpStatus, m.grpcCode, m.message, headers);
      if (!req.complete) req.resume();
    } finally {
      account.release();
    }
  }
}
