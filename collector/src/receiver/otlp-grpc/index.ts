/**
 * OTLP/gRPC receiver (opentelemetry-proto specification, "OTLP/gRPC"): unary Export on LogsService, MetricsService
 * and TraceService. The service definitions are hand-written with identity serializers, so the request bytes
 * reach the pipeline unchanged (forwarding passes them on as they came) and logs are decoded by the same
 * decoder as OTLP/HTTP. grpc-js undoes gzip itself and enforces the size limit after decompression.
 *
 * A server interceptor runs when the headers arrive, before grpc-js reads (or inflates) a byte of the message:
 * it refuses a missing or wrong token there, reserves the worst case (twice otlp.maxRequestBytes) from the
 * process-wide in-flight budget before letting the message be read, and ends a call whose message, and the end
 * of its stream, have not arrived within otlp.requestTimeout, or whose message arrives under the minimum rate
 * while others are refused the budget (body-rate.ts). A bomb thus costs nothing without the token, and at
 * most the reserved bytes with it. The calls of one HTTP/2 connection get no reservation past half of the budget,
 * so one client's streams that send headers and no message cannot hold it all.
 *
 * An export the store cannot take now (a database restarting), or hookwatch cannot (otlp.maxPendingRequests
 * batches waiting for the store), is held and its commit tried again until a little before the client's deadline
 * (store-hold.ts): OpenTelemetry's JavaScript gRPC exporter never sends a batch again.
 *
 * Each HTTP/2 connection has at most MAX_CONCURRENT_STREAMS calls open at once, and a call at most
 * MAX_HEADER_LIST_BYTES of metadata, refused before the interceptor runs (screenCalls).
 *
 * With otlp.tls the port speaks TLS (mutual TLS with a client CA): grpc-js takes a rotated certificate through
 * its server credentials' update hook, so new connections get it without a restart.
 */
import {
  Metadata, Server, ServerCredentials, ServerInterceptingCall, status as GrpcStatus,
  type ServerInterceptingCallInterface, type ServerInterceptor, type ServerUnaryCall, type ServiceDefinition, type StatusObject, type sendUnaryData,
} from '@grpc/grpc-js';
import { constants as http2Constants, type Http2Session, type Settings as Http2Settings, type IncomingHttpHeaders, type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2';
import { Server as NetServer, type Socket } from 'node:net';
import { NEW_CONNECTION_GRACE_MS } from '../../net/close-server.ts';
import { ThrottledLine } from '../../telemetry/throttled-line.ts';
import { slowClientLimits } from '../../net/slow-clients.ts';
import type { Server as TlsServer, TLSSocket } from 'node:tls';
import { splitAddr } from '../../net/addr.ts';
import type { TlsCredentials } from '../../net/tls.ts';
import { echoed } from '../../request-error.ts';
import { validatePassThroughSteps } from '../../otlp/validate.ts';
import { encodeExportResponse } from '../../otlp/encode.ts';
import { STATUS_DETAILS_KEY, encodeRetryStatus } from '../../otlp/grpc-status.ts';
import type { Signal } from '../../pipeline/consumer.ts';
import { OverloadedError, UnauthenticatedError, mapError } from '../../pipeline/errors.ts';
import { authCredentials, sameSecret, secretDigest } from '../../net/secret.ts';
import { decodeLogs, decodeWithin, type InflightAccount } from '../inflight.ts';
import { WRONG_PROTOCOL_LOG_INTERVAL_MS, type OtlpReceiverOptions, type ReceiverStats, type RejectReason } from '../options.ts';
import { StoreHolds, wakeAtOnce, type HoldBackoff } from './store-hold.ts';
import { tooSlowMessage, watchBodyRate } from '../body-rate.ts';
import { OtlpRefusals, type RefusedAt } from '../refusals.ts';

/** Commits a decoded request; resolves with the records rejected and the message of an OTLP partial success. */
type Consume = () => Promise<{ rejected: number; message: string }>;

/** A status as a server interceptor passes it on. */
type SentStatus = Parameters<ServerInterceptingCall['sendStatus']>[0];

const SERVICES: Record<Signal, string> = {
  logs: '/opentelemetry.proto.collector.logs.v1.LogsService/Export',
  metrics: '/opentelemetry.proto.collector.metrics.v1.MetricsService/Export',
  traces: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
};

/** The paths grpc-js serves: a call to any other is answered UNIMPLEMENTED. */
const SERVED_PATHS: ReadonlySet<string> = new Set(Object.values(SERVICES));

const identity = (b: Buffer): Buffer => b;

/**
 * How long a connection told GOAWAY may take to close before its socket is destroyed: a client that ignores the
 * GOAWAY (or reads nothing, so that it never arrives) must not keep the connection.
 */
const GOAWAY_GRACE_MS = 1000;

/**
 * The most of one header field node:http2 decodes: nghttp2's HPACK decoder refuses a name or value whose encoded
 * length passes 64 KiB (NGHTTP2_HD_MAX_NV) as a COMPRESSION_ERROR, which ends the whole connection.
 */
const HPACK_FIELD_LIMIT = 64 * 1024;

/**
 * The most request metadata a call may carry, all its headers counted as HTTP/2 counts a header list (RFC 9113
 * section 6.5.2: each name and value, plus 32 bytes a field). A call over it is answered RESOURCE_EXHAUSTED, counted
 * as header_overflow and logged (screenCalls), before any hookwatch code reads it. 64 KiB is four times what the
 * OTLP/HTTP port reads of request headers (16 KiB): room for several bearer tokens (a JWT with group claims runs to
 * 8-12 KiB) in OTEL_EXPORTER_OTLP_HEADERS beside what a proxy adds, and as much as node:http2 decodes of a single
 * entry anyway (HPACK_FIELD_LIMIT).
 */
const MAX_HEADER_LIST_BYTES = HPACK_FIELD_LIMIT;

/**
 * The header list size advertised to clients (SETTINGS_MAX_HEADER_LIST_SIZE), twice MAX_HEADER_LIST_BYTES: once a
 * client has acknowledged it, node:http2 stops decoding a larger list and resets its stream (RST_STREAM
 * ENHANCE_YOUR_CALM, RESOURCE_EXHAUSTED at a gRPC client) with no hookwatch code running, and a grpc-go client
 * fails such a call itself, naming the limit. Without it node:http2 decoded 128 entries of up to 64 KiB each for
 * every stream, and HPACK lets a client repeat one 4 KiB entry at a byte a copy: half a megabyte of strings for 120
 * bytes sent. It is above MAX_HEADER_LIST_BYTES so that a call a little over that is answered with a status that
 * says why, and counted.
 */
const ADVERTISED_HEADER_LIST_BYTES = 2 * MAX_HEADER_LIST_BYTES;

/**
 * The calls one HTTP/2 connection may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS), RFC 9113's recommended
 * minimum. An OpenTelemetry exporter runs a few exports at a time; its HTTP/2 client queues calls past the limit.
 * A stream past it is refused (REFUSED_STREAM, which a gRPC client retries on a stream of its own, or once the client
 * has acknowledged the limit, a connection error): without it one connection opened streams without bound, each
 * with its headers decoded, and kept the event loop busy.
 */
const MAX_CONCURRENT_STREAMS = 100;

/**
 * How long a client has to acknowledge the server's SETTINGS (RFC 9113 section 6.5.3), and how many calls it may
 * start before it has: until then the limits above are not in force (the header list size not at all, the open calls
 * only as REFUSED_STREAM), and node:http2 decoded some 1,100 streams' headers, each up to 128 entries of 64 KiB,
 * before it ended such a connection. An HTTP/2 client acknowledges SETTINGS as it reads them (grpc-js and grpc-go
 * start no call before they have), so a client that has not after 5 s, or has started more calls than one
 * connection may have open at once, is not going to: its connection is closed with GOAWAY SETTINGS_TIMEOUT and
 * counted as malformed.
 */
const SETTINGS_ACK_TIMEOUT_MS = 5000;
const MAX_CALLS_BEFORE_SETTINGS_ACK = MAX_CONCURRENT_STREAMS;

/** The size of a header list as HTTP/2 counts it (RFC 9113 section 6.5.2), from node:http2's raw headers. */
function headerListBytes(rawHeaders: readonly string[]): number {
  let bytes = 0;
  for (const field of rawHeaders) bytes += field.length;
  return bytes + 16 * rawHeaders.length;
}

/** What a client whose metadata this port cannot read is to change (the overview's hint; its own line says more). */
const METADATA_HINT = 'send less metadata: an OTEL_EXPORTER_OTLP_HEADERS value, or headers a proxy adds';

/** The errno node:http2 gives a connection that did not start with HTTP/2's client preface (NGHTTP2_ERR_BAD_CLIENT_MAGIC). */
const NGHTTP2_ERR_BAD_CLIENT_MAGIC = -903;

/** A TCP connection that has not started a call: when it opened, its HTTP/2 session once it has one, and when that was told GOAWAY. */
interface FreshConnection {
  socket: Socket;
  openedMs: number;
  session?: ServerHttp2Session;
  goawayMs?: number;
}

/** A one-method service definition whose messages stay raw bytes. */
function exportService(path: string): ServiceDefinition {
  return {
    Export: {
      path,
      requestStream: false,
      responseStream: false,
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity,
    },
  };
}

/** The HTTP/2 stream a call runs on: not part of grpc-js's typed interface, so undefined for a grpc-js without it. */
function callStream(call: ServerInterceptingCallInterface): ServerHttp2Stream | undefined {
  return (call as unknown as { stream?: ServerHttp2Stream }).stream;
}

/**
 * After a refusal, asks the client to stop sending with RST_STREAM(NO_ERROR), as RFC 9113 section 8.1 allows
 * once the response is complete (grpc-go does the same). grpc-js answers but leaves a half-open stream to the
 * client, so one that never finishes its message would keep the stream, and the partial message buffered for
 * it, alive. The stream is not part of grpc-js's typed interface; without it the refusal still stands.
 */
function resetStream(call: ServerInterceptingCallInterface): void {
  const stream = callStream(call);
  if (stream && typeof stream.close === 'function' && !stream.closed) stream.close(http2Constants.NGHTTP2_NO_ERROR);
}

/** Where a refused call came from, for the refusal's log line and the overview (refusals.ts): read only on a refusal. */
function callAt(path: string, call: Pick<ServerInterceptingCallInterface, 'getPeer'>): RefusedAt {
  return { path, client: call.getPeer() };
}

/** The answer to a message flagged compressed in a call that names no compression (gRPC compression.md, test case 6). */
const COMPRESSED_IDENTITY_DETAILS = 'the message is flagged compressed (Compressed-Flag 1) but the call names no grpc-encoding to undo it, or identity';

/**
 * Makes grpc-js refuse a message flagged compressed in a call without a grpc-encoding, or with identity, as INTERNAL,
 * as the gRPC protocol requires (PROTOCOL-HTTP2.md: without Message-Encoding the Compressed-Flag must be 0;
 * compression.md: such a message MUST fail with INTERNAL). grpc-js reads it as it stands, so compressed bytes reached
 * the decoder and were answered INVALID_ARGUMENT, and ones that happened to decode would have been stored as sent.
 * grpc-js inflates a message in its call's decompressMessage (the message with its 5-byte prefix, and the encoding
 * it applies: identity for a message not flagged compressed or a call without grpc-encoding). That method is not
 * part of its typed interface: without it the message is read as before, and false is returned.
 *
 * Before a compressed message is inflated, `beforeInflate` is asked for the room it may inflate to: when it says
 * no (it has refused the call, or the call was answered already), the message is never inflated.
 */
function refuseCompressedIdentity(call: ServerInterceptingCallInterface, beforeInflate: () => boolean): boolean {
  const target = call as unknown as { decompressMessage?: (message: Buffer, encoding: string) => Buffer | Promise<Buffer> };
  const inflate = target.decompressMessage;
  if (typeof inflate !== 'function') return false;
  target.decompressMessage = (message, encoding) => {
    // grpc-js answers a rejection of { code, details } as the call's status, as it does its own inflate errors.
    if (encoding === 'identity' && message[0] === 1) return Promise.reject({ code: GrpcStatus.INTERNAL, details: COMPRESSED_IDENTITY_DETAILS });
    // The call was answered already: grpc-js waits on nothing more of it.
    if (message[0] === 1 && !beforeInflate()) return new Promise<Buffer>(() => {});
    return inflate.call(call, message, encoding);
  };
  return true;
}

/** What arrived of a call's message (on a grpc-js that shows its stream). */
interface MessageArrival {
  /** Bytes of the stream, its 5-byte prefix included. */
  bytes: number;
  /** The message length its prefix declares, once the prefix is read. */
  declared: number | undefined;
}

/** Said of a call whose stream ended before its message was whole: how much of it came, not that none did. */
function cutShort({ bytes, declared }: MessageArrival): string {
  if (declared === undefined) return `the request message was cut short: the stream ended within its 5-byte length prefix, after ${bytes} bytes`;
  return `the request message was cut short: its prefix declares ${declared} bytes, and the stream ended after ${bytes - 5} of them`;
}

/**
 * The refusals grpc-js answers itself while it reads a message, before hookwatch sees it (its status then bypasses
 * the interceptor), by the rejection reason hookwatch counts for them: a message over otlp.maxRequestBytes (as
 * declared, or once inflated), a compression it does not speak, a compressed message that does not inflate or that
 * names no compression (refuseCompressedIdentity).
 */
const GRPC_JS_REFUSALS: Partial<Record<number, RejectReason>> = {
  [GrpcStatus.RESOURCE_EXHAUSTED]: 'too_large',
  [GrpcStatus.UNIMPLEMENTED]: 'unsupported_media_type',
  [GrpcStatus.INTERNAL]: 'bad_request',
};

/**
 * The grpc-status a call's stream was answered with (trailers-only or trailers), read off the stream; undefined
 * without one. A stream its client reset before any answer has sent no headers at all (node:http2 leaves them
 * undefined, whatever its types say).
 */
function sentStatus(call: ServerInterceptingCallInterface): number | undefined {
  const stream = callStream(call) as (Omit<ServerHttp2Stream, 'sentHeaders'> & { sentHeaders?: ServerHttp2Stream['sentHeaders'] }) | undefined;
  const code = stream?.sentTrailers?.['grpc-status'] ?? stream?.sentHeaders?.['grpc-status'];
  return code === undefined ? undefined : Number(code);
}

/**
 * Whether the client gave up on the call before its request was whole: it reset the stream (RST_STREAM, as a
 * grpc-go client cancelling does) or its connection went away. node:http2 ends the request stream then, and grpc-js
 * takes that for the request's end.
 */
function clientAborted(call: ServerInterceptingCallInterface): boolean {
  return callStream(call)?.aborted === true;
}

/**
 * Server credentials from otlp.tls that follow its files: grpc-js asks credentials for the options of the TLS
 * server it makes, and hands each later update to that server (setSecureContext) for new connections.
 */
class RotatingServerCredentials extends ServerCredentials {
  constructor(tls: TlsCredentials, handshakeTimeoutMs: number) {
    super({ requestCert: tls.mutual, rejectUnauthorized: tls.mutual, handshakeTimeout: handshakeTimeoutMs }, tls.contextOptions());
    tls.onChange((options) => this.updateSecureContextOptions(options));
  }

  override _equals(other: ServerCredentials): boolean {
    return other === this;
  }
}

export class OtlpGrpcReceiver {
  /** Exports held while the store is unavailable (store-hold.ts). */
  private readonly holds: StoreHolds;
  readonly stats: ReceiverStats;
  private readonly server: Server;
  private readonly opts: OtlpReceiverOptions;
  private readonly tokenDigest: Buffer | undefined;
  private started = false;
  private stopped: Promise<void> | undefined;
  /** TCP connections that have not started a call yet, by peer. */
  private readonly fresh = new Map<string, FreshConnection>();
  /** Closes the connections that have started no call in the time an OTLP/HTTP request has for its headers. */
  private freshSweep: NodeJS.Timeout | undefined;
  /** The HTTP/2 sessions that have started a call: they speak HTTP/2, whatever goes wrong with them later. */
  private readonly calling = new WeakSet<Http2Session>();
  /**
   * Each HTTP/2 session's TCP socket (node:http2 unbinds it from a session that failed) and the bytes read on it
   * when one of its calls last started, or last had its request end or its stream close (0 before any): what
   * arrives after that has not been read as a call's headers or message.
   */
  private readonly sessionReads = new WeakMap<Http2Session, { socket: Socket; atLastCall: number }>();
  /** What the calls of each HTTP/2 session hold of the in-flight budget (their accounts' bytes). */
  private readonly sessionBytes = new WeakMap<Http2Session, number>();
  /**
   * The request messages handled now, each until its handler no longer uses it: a try at committing it that a
   * hold gave up on goes on after the call is answered, and the message's bytes stay counted until it ends.
   */
  private readonly messagesInUse = new WeakMap<Buffer, Promise<void>>();
  /**
   * The clients that do not speak gRPC, logged: the exporter itself reads only a closed connection, and a counter
   * on /metrics is found only by whoever looks for it.
   */
  private readonly notGrpc: ThrottledLine;
  /** The clients whose headers node:http2 could not read, logged: their calls fail with a bare protocol error. */
  private readonly headerOverflows: ThrottledLine;
  /** The calls refused for metadata over MAX_HEADER_LIST_BYTES, logged: their clients see only RESOURCE_EXHAUSTED. */
  private readonly metadataOverflows: ThrottledLine;
  /** Refusals logged and kept for the overview: the ones given, or the receiver's own. */
  private readonly refusals: OtlpRefusals;
  private port = 0;

  /** `holdBackoff`: how long a held export waits between its tries when nothing wakes it sooner (STORE_HOLD's unless given). */
  constructor(opts: OtlpReceiverOptions, holdBackoff?: HoldBackoff) {
    this.opts = opts;
    this.holds = new StoreHolds(wakeAtOnce(opts.maxPending), holdBackoff);
    this.stats = { requests: {}, rejected: {}, held: this.holds.stats };
    this.refusals = opts.refusals ?? new OtlpRefusals({ logger: opts.logger });
    this.notGrpc = new ThrottledLine(WRONG_PROTOCOL_LOG_INTERVAL_MS, () => performance.now(), (connections) => {
      const httpPort = opts.otlpHttpPort?.();
      const where = httpPort === undefined ? 'the OTLP/HTTP port (otlp.http.addr, 4318 by default)' : `the OTLP/HTTP port, ${httpPort} (otlp.http.addr)`;
      opts.logger.warn(`otlp grpc: a client that does not speak gRPC connected; an OTLP/HTTP exporter (OTEL_EXPORTER_OTLP_PROTOCOL http/protobuf or http/json) goes to ${where}, a gRPC one to this port needs OTEL_EXPORTER_OTLP_PROTOCOL=grpc`, { port: this.port, connections });
    });
    this.headerOverflows = new ThrottledLine(WRONG_PROTOCOL_LOG_INTERVAL_MS, () => performance.now(), (connections) => {
      opts.logger.warn(`otlp grpc: a client sent a header over ${HPACK_FIELD_LIMIT / 1024} KiB (a gRPC metadata entry, as HPACK encodes it), more than node:http2 reads of one; its connection was closed, failing its calls (INTERNAL, RST_STREAM code 9 at a grpc-js client). Send smaller metadata: an OTEL_EXPORTER_OTLP_HEADERS value, or a header a proxy adds`, { port: this.port, connections });
    });
    this.metadataOverflows = new ThrottledLine(WRONG_PROTOCOL_LOG_INTERVAL_MS, () => performance.now(), (calls) => {
      opts.logger.warn(`otlp grpc: a call carried more than ${MAX_HEADER_LIST_BYTES / 1024} KiB of metadata (its headers, as HTTP/2 counts them), more than this port reads; it was refused (RESOURCE_EXHAUSTED). Send less metadata: an OTEL_EXPORTER_OTLP_HEADERS value, or headers a proxy adds`, { port: this.port, calls });
    });
    this.tokenDigest = opts.ingestToken ? secretDigest(opts.ingestToken) : undefined;
    this.server = new Server({
      'grpc.max_receive_message_length': opts.maxRequestBytes,
      // Idle clients (Claude Code keeps one channel per session) must not pin connections forever.
      'grpc.max_connection_idle_ms': 5 * 60_000,
      'grpc.max_concurrent_streams': MAX_CONCURRENT_STREAMS,
      interceptors: [this.guard],
    });
    // grpc-js has no option for the header list size: it passes these settings to node:http2 as it makes a server.
    const common = (this.server as unknown as { commonServerOptions?: { settings?: Http2Settings } }).commonServerOptions;
    if (common) common.settings = { ...common.settings, maxHeaderListSize: ADVERTISED_HEADER_LIST_BYTES };
    for (const signal of Object.keys(SERVICES) as Signal[]) {
      this.server.addService(exportService(SERVICES[signal]), {
        Export: (call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) => {
          this.handle(signal, call, callback).catch((err: unknown) => {
            opts.logger.error('otlp grpc request failed unexpectedly', { err });
            callback({ code: GrpcStatus.INTERNAL, details: 'internal error' });
          });
        },
      });
    }
  }

  /** The store finds the database answering again: held exports try their commit now. */
  storeReachable(): void {
    this.holds.reachable();
  }

  /**
   * A batch waiting for the store (otlp.maxPendingRequests), an OTLP/HTTP one as well, leaves its place, or requests
   * leave the forwarding queue: the next held export in line tries now.
   */
  placeFreed(): void {
    this.holds.placeFreed();
  }

  /** Starts listening; resolves with the bound port (port 0 picks a free one). */
  async start(): Promise<{ host: string; port: number }> {
    const { host, port } = splitAddr(this.opts.addr);
    const target = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
    const bound = await new Promise<number>((resolve, reject) => {
      const credentials = this.opts.tls ? new RotatingServerCredentials(this.opts.tls, Math.min(this.opts.requestTimeoutMs, 120_000)) : ServerCredentials.createInsecure();
      this.server.bindAsync(target, credentials, (err, p) => (err ? reject(err) : resolve(p)));
    });
    this.started = true;
    this.port = bound;
    for (const server of this.listeningServers()) {
      this.screenCalls(server);
      this.awaitSettingsAck(server);
      this.trackFresh(server);
      this.countNotHttp2(server);
    }
    // A client that connects and never starts a call (slowloris) would otherwise hold its connection until
    // grpc.max_connection_idle_ms, minutes; the OTLP/HTTP port closes such a connection at its headers timeout.
    const { headersTimeout, connectionsCheckingInterval } = slowClientLimits(this.opts.requestTimeoutMs);
    this.freshSweep = setInterval(() => this.closeFresh(headersTimeout ?? this.opts.requestTimeoutMs), connectionsCheckingInterval);
    this.freshSweep.unref();
    if (this.opts.tls && this.opts.handshakes) for (const server of this.listeningServers()) this.opts.handshakes.watch('otlp_grpc', server as TlsServer);
    return { host, port: bound };
  }

  /**
   * The node:http2 servers grpc-js listens with (one per bound address). grpc-js does not offer them, so they are
   * read from its field; a grpc-js without it gives none, and what needs them is skipped.
   */
  private listeningServers(): NetServer[] {
    const servers = (this.server as unknown as { http2Servers?: unknown }).http2Servers;
    return servers instanceof Map ? [...(servers as Map<unknown, unknown>).keys()].filter((s): s is NetServer => s instanceof NetServer) : [];
  }

  /**
   * Sees each call before grpc-js does (its handler of the server's streams is moved behind this one). grpc-js serves
   * any method, where gRPC has a call be a POST (PROTOCOL-HTTP2.md): a GET carrying a message was exported. Such a
   * call is answered here, as grpc-go answers it: HTTP 405 with `Allow: POST` and INTERNAL naming the method, the
   * stream reset (NO_ERROR) if the client has not ended it, counted as method_not_allowed. A call to a path no
   * service has is answered UNIMPLEMENTED by grpc-js with no hookwatch code running: it is counted here as
   * not_found, as the OTLP/HTTP port counts a path it does not serve. A request that is no gRPC call (another
   * content-type) is left to grpc-js, which answers 415 before it looks at the method or the path. A grpc-js that
   * handles streams otherwise is left to answer every call.
   */
  private screenCalls(server: NetServer): void {
    const grpcJs = server.listeners('stream') as ((...args: unknown[]) => void)[];
    if (grpcJs.length === 0) return;
    server.removeAllListeners('stream');
    server.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, ...rest: unknown[]) => {
      // node:http2 passes the flags, then the headers as received: [name, value, name, value, ...].
      const rawHeaders = rest[1];
      if (Array.isArray(rawHeaders) && headerListBytes(rawHeaders as string[]) > MAX_HEADER_LIST_BYTES) {
        this.refuseMetadata(stream);
        return;
      }
      const contentType = headers['content-type'];
      if (typeof contentType === 'string' && contentType.startsWith('application/grpc')) {
        const method = headers[':method'] ?? '';
        if (method !== 'POST') {
          this.refuseMethod(stream, method);
          return;
        }
        // The method asked, without a query string (which may carry a token): never logged or shown.
        const path = (headers[':path'] ?? '').split('?')[0] ?? '';
        if (!SERVED_PATHS.has(path)) this.refuse('not_found', { path: path || '/', client: stream.session?.socket?.remoteAddress });
      }
      for (const listener of grpcJs) listener.call(server, stream, headers, ...rest);
    });
  }

  /**
   * Closes a connection whose client has not acknowledged the server's SETTINGS within SETTINGS_ACK_TIMEOUT_MS, or
   * before starting more than MAX_CALLS_BEFORE_SETTINGS_ACK calls: GOAWAY SETTINGS_TIMEOUT (RFC 9113 section
   * 6.5.3), its calls ended, counted as malformed.
   */
  private awaitSettingsAck(server: NetServer): void {
    server.on('session', (session: ServerHttp2Session) => {
      if (!session.pendingSettingsAck) return;
      let calls = 0;
      const close = (): void => {
        done();
        if (session.closed || session.destroyed) return;
        this.refuse('malformed', { client: session.socket?.remoteAddress });
        // With an error, or node:http2 sends GOAWAY NO_ERROR whatever the code; the server's sessionError takes it.
        session.destroy(new Error('the client did not acknowledge the server\'s SETTINGS'), http2Constants.NGHTTP2_SETTINGS_TIMEOUT);
      };
      const onStream = (): void => {
        if (++calls > MAX_CALLS_BEFORE_SETTINGS_ACK) close();
      };
      const timer = setTimeout(close, SETTINGS_ACK_TIMEOUT_MS);
      timer.unref();
      const done = (): void => {
        clearTimeout(timer);
        session.off('stream', onStream);
        session.off('localSettings', done);
        session.off('close', done);
      };
      session.on('stream', onStream);
      session.on('localSettings', done);
      session.on('close', done);
    });
  }

  /**
   * Answers a call whose metadata is over MAX_HEADER_LIST_BYTES as RESOURCE_EXHAUSTED, as the OTLP/HTTP port answers
   * headers over its limit 431, counted as header_overflow and logged; the stream is reset (NO_ERROR) if the client
   * has not ended it.
   */
  private refuseMetadata(stream: ServerHttp2Stream): void {
    this.refuse('header_overflow', { client: stream.session?.socket?.remoteAddress }, METADATA_HINT, true);
    this.metadataOverflows.note();
    stream.on('error', () => {});
    stream.respond({
      ':status': 200,
      'content-type': 'application/grpc',
      'grpc-status': String(GrpcStatus.RESOURCE_EXHAUSTED),
      'grpc-message': encodeURI(`request metadata over ${MAX_HEADER_LIST_BYTES} bytes (as HTTP/2 counts a header list): send less metadata`),
    }, { endStream: true });
    if (!stream.closed) stream.close(http2Constants.NGHTTP2_NO_ERROR);
  }

  /** Answers a call that is not a POST: 405 with INTERNAL, as grpc-go does (see screenCalls). */
  private refuseMethod(stream: ServerHttp2Stream, method: string): void {
    this.refuse('method_not_allowed', { client: stream.session?.socket?.remoteAddress });
    stream.on('error', () => {});
    stream.respond({
      ':status': 405,
      allow: 'POST',
      'content-type': 'application/grpc',
      'grpc-status': String(GrpcStatus.INTERNAL),
      // Percent-encoded, as grpc-message is (the method is cut to ECHO_CHARS characters, then ends in an ellipsis).
      'grpc-message': encodeURI(`method ${echoed(method)} is not allowed: a gRPC call is a POST`),
    }, { endStream: true });
    // A client still sending is asked to stop, as resetStream does after a refusal (RFC 9113 section 8.1).
    if (!stream.closed) stream.close(http2Constants.NGHTTP2_NO_ERROR);
  }

  /**
   * Follows the connections that have not started a call (a load balancer's TCP check, a TLS handshake never
   * finished, a client that connected and said nothing): grpc-js's shutdown waits for them as for any other, and
   * they would hold it until the forced end.
   */
  private trackFresh(server: NetServer): void {
    const peer = (s: { remoteAddress?: string | undefined; remotePort?: number | undefined }): string => `${s.remoteAddress ?? ''}|${s.remotePort ?? ''}`;
    // Before node:http2's own listener, which makes a plain-text connection's session (and emits 'session') at once.
    server.prependListener('connection', (socket: Socket) => {
      const key = peer(socket);
      this.fresh.set(key, { socket, openedMs: performance.now() });
      socket.once('close', () => this.fresh.delete(key));
    });
    // Its HTTP/2 session: made at once in plain text, after the handshake with TLS.
    server.on('session', (session: ServerHttp2Session) => {
      const connection = this.fresh.get(peer(session.socket));
      if (!connection) return;
      connection.session = session;
      this.sessionReads.set(session, { socket: connection.socket, atLastCall: 0 });
    });
    server.on('stream', (stream: ServerHttp2Stream) => {
      const { session } = stream;
      if (session) this.calling.add(session);
      const reads = session && this.sessionReads.get(session);
      if (reads) {
        // A call's message (and all else its client sent before the request ended) is no header: a protocol error
        // after a large export must not be taken for one.
        const mark = (): void => {
          reads.atLastCall = Math.max(reads.atLastCall, reads.socket.bytesRead);
        };
        mark();
        stream.once('end', mark);
        stream.once('close', mark);
      }
      const socket = session?.socket;
      if (socket) this.fresh.delete(peer(socket));
    });
  }

  /**
   * Counts the clients that do not speak HTTP/2 as `malformed`, as the OTLP/HTTP port counts HTTP it cannot read:
   * an OTLP/HTTP exporter, or one speaking TLS to the plain-text port, whose first bytes node:http2 refuses (a
   * bad client preface); with otlp.tls, one whose handshake agreed on no protocol (no ALPN), which node:http2
   * closes without a session. A client that offers only HTTP/1.1 fails the handshake itself, counted with the
   * failed handshakes (hookwatch_tls_handshake_failures_total), as is a plain-text client on the TLS port.
   *
   * A gRPC client whose call carries a metadata entry past HPACK_FIELD_LIMIT does speak HTTP/2: node:http2 cannot
   * decode that header, and HTTP/2 has the whole connection end then (COMPRESSION_ERROR), with no stream left to
   * answer on. It is counted as header_overflow, as the OTLP/HTTP port counts headers over its limit (431), and
   * logged as such. node:http2 reports every protocol error past the preface alike (NGHTTP2_ERR_PROTO), so one is
   * taken for such a header when at least HPACK_FIELD_LIMIT bytes arrived since the connection's last call started,
   * or since the request of one ended or its stream closed (fewer cannot have carried it): the message of an export
   * over 64 KiB is not counted toward it. Any other, on a connection that never started a call, counts as malformed.
   */
  private countNotHttp2(server: NetServer): void {
    server.on('sessionError', (err: NodeJS.ErrnoException, session: ServerHttp2Session) => {
      if (err.code !== 'ERR_HTTP2_ERROR') return;
      const reads = this.sessionReads.get(session);
      if (err.errno !== NGHTTP2_ERR_BAD_CLIENT_MAGIC && reads && reads.socket.bytesRead - reads.atLastCall >= HPACK_FIELD_LIMIT) {
        this.refuse('header_overflow', { client: reads.socket.remoteAddress }, METADATA_HINT, true);
        this.headerOverflows.note();
      } else if (!this.calling.has(session)) {
        this.notGrpcClient(session.socket?.remoteAddress);
      }
    });
    if (this.opts.tls) {
      server.on('secureConnection', (socket: TLSSocket) => {
        if (socket.alpnProtocol !== 'h2') this.notGrpcClient(socket.remoteAddress);
      });
    }
  }

  private notGrpcClient(client: string | undefined): void {
    const httpPort = this.opts.otlpHttpPort?.();
    this.refuse('malformed', { client }, `an OTLP/HTTP exporter goes to the OTLP/HTTP port${httpPort === undefined ? '' : `, ${httpPort}`}; a gRPC one to this port needs OTEL_EXPORTER_OTLP_PROTOCOL=grpc`, true);
    this.notGrpc.note();
  }

  /**
   * Closes the connections open `ms` or longer without having started a call. One with an HTTP/2 session is told
   * GOAWAY (NO_ERROR), as grpc-js closes a connection idle past grpc.max_connection_idle_ms and grpc-go any it
   * closes: its client knows the connection is not to be used and opens another for its next export, where a
   * destroyed socket looks like a network failure. One that has not closed GOAWAY_GRACE_MS after, or that has no
   * session yet (a TLS handshake not finished), is destroyed. At a stop grpc-js has told each session GOAWAY already.
   */
  private closeFresh(ms: number): void {
    const now = performance.now();
    for (const connection of this.fresh.values()) {
      if (connection.openedMs > now - ms) continue;
      const { session } = connection;
      if (session && !session.closed && !session.destroyed) {
        // close() sends GOAWAY and ends the session once it has no stream left (it has none: no call started).
        session.close();
        connection.goawayMs = now;
      } else if (connection.goawayMs === undefined || connection.goawayMs <= now - GOAWAY_GRACE_MS) {
        connection.socket.destroy();
      }
    }
  }

  /**
   * Stops accepting and lets in-flight calls finish (forced after 10 s); an export held while the store is
   * unavailable is answered UNAVAILABLE at once, or as its try running then ends. A connection that has not started a call
   * is closed once it has been open NEW_CONNECTION_GRACE_MS, as the HTTP ports close theirs. Safe to call twice or
   * before start.
   */
  shutdown(): Promise<void> {
    if (!this.started) return Promise.resolve();
    // Held exports are answered UNAVAILABLE now (or as their try running ends): the drain does not wait out their holds.
    this.holds.stop();
    clearInterval(this.freshSweep);
    this.notGrpc.flush();
    this.headerOverflows.flush();
    this.metadataOverflows.flush();
    this.refusals.flush();
    this.stopped ??= new Promise<void>((resolve) => {
      const closeFresh = (): void => this.closeFresh(NEW_CONNECTION_GRACE_MS);
      const sweep = setInterval(closeFresh, 50);
      sweep.unref();
      const done = (): void => {
        clearInterval(sweep);
        clearTimeout(force);
        resolve();
      };
      const force = setTimeout(() => {
        this.server.forceShutdown();
        // grpc-js ends the calls; a connection that never became one is not its to end.
        for (const { socket } of this.fresh.values()) socket.destroy();
        done();
      }, 10_000);
      force.unref();
      this.server.tryShutdown(done);
      closeFresh();
    });
    return this.stopped;
  }

  /**
   * Runs on the headers, before the message is read: authentication and the request timeout; the in-flight
   * reservation follows once the message's length prefix is read (reserveDeclared). Until it lets the metadata
   * through, grpc-js keeps the stream paused, so nothing is buffered or inflated.
   */
  private readonly guard: ServerInterceptor = (method, next: ServerInterceptingCallInterface) => {
    const signal = (Object.keys(SERVICES) as Signal[]).find((s) => SERVICES[s] === method.path);
    let account: InflightAccount | undefined;
    /** The call's HTTP/2 session, and what of the account's bytes it has been charged with. */
    const session = callStream(next)?.session;
    let charged = 0;
    const charge = (): void => {
      const held = account?.heldBytes ?? 0;
      if (session && held !== charged) this.sessionBytes.set(session, (this.sessionBytes.get(session) ?? 0) + held - charged);
      charged = held;
    };
    let timer: NodeJS.Timeout | undefined;
    /** Stops checking the rate at which the message arrives (body-rate.ts). */
    let stopRate = (): void => {};
    /**
     * Whether a status passed this interceptor: hookwatch's own answers, which count themselves, and grpc-js's refusal
     * of a call without exactly one message, which oneMessageRefusal counts.
     */
    let answered = false;
    /** Messages the call carried: an Export call carries exactly one. */
    let messages = 0;
    /** What arrived of the message: the bytes of the stream, and the length its prefix declares once read. */
    const arrived: MessageArrival = { bytes: 0, declared: undefined };
    /** The call's message, once read. */
    let message: Buffer | undefined;
    /** The call ends: what it holds is given back, the message's bytes once its handler no longer uses it. */
    const finish = (): void => {
      clearTimeout(timer);
      stopRate();
      const give = (): void => {
        account?.release();
        charge();
      };
      const inUse = message && this.messagesInUse.get(message);
      if (inUse) void inUse.then(give);
      else give();
    };
    /** A call refused before its message is handed on: counted, answered and its stream reset. */
    const refuse = (err: unknown): void => {
      const status = this.refusal(err, callAt(method.path, next));
      if (signal) this.count(this.stats.requests, `${signal}:${status.code}`);
      call.sendStatus(status);
      resetStream(next);
    };
    /** Charges the call with `bytes` in all (what it holds already counts); refused past its connection's share or the budget. */
    const reserve = (bytes: number): void => {
      const more = bytes - (account?.heldBytes ?? 0);
      if (!account || answered || more <= 0) return;
      this.refuseBusySession(session, more);
      account.take(more);
      charge();
    };
    /** Reserves `bytes` in all for the call; false when it was refused for them (and answered). */
    const tryReserve = (bytes: number): boolean => {
      try {
        reserve(bytes);
        return true;
      } catch (err) {
        refuse(err);
        return false;
      }
    };
    /**
     * The message's 5-byte prefix was read: the call reserves what grpc-js will hold of it, not the worst case as its
     * metadata arrives, so a slow upload holds no more than it declared. grpc-js holds the message's parts and their
     * concatenation at once, twice its declared length. Past otlp.maxRequestBytes grpc-js refuses the message
     * itself, so no more than twice that is reserved for it.
     */
    const reserveDeclared = (length: number): boolean => tryReserve(Math.min(2 * this.opts.maxRequestBytes, 2 * length));
    // A compressed message's inflated size is unknown until grpc-js has inflated it: twice otlp.maxRequestBytes is
    // reserved before it starts (the inflated parts and their concatenation), and a call refused for it never inflates,
    // nor one answered already (by its timeout, say), for which reserve takes nothing and a message would be inflated
    // that no one reads.
    const inflateSeen = refuseCompressedIdentity(next, () => !answered && tryReserve(2 * this.opts.maxRequestBytes));
    // A grpc-js that hides the stream, or where its message is inflated, leaves the reservation to the metadata.
    const observable = inflateSeen && typeof callStream(next)?.on === 'function';
    const call: ServerInterceptingCall = new ServerInterceptingCall(next, {
      start: (startNext) => {
        startNext({
          onReceiveMetadata: (metadata, metadataNext) => {
            try {
              if (!this.authorized(metadata)) throw new UnauthenticatedError('missing or wrong bearer token (metadata authorization: Bearer <token>)');
              account = this.opts.inflight.open();
              // A grpc-js that hides the stream leaves the message's length unknown: the worst case is reserved.
              if (!observable) reserve(2 * this.opts.maxRequestBytes);
            } catch (err) {
              refuse(err);
              return;
            }
            timer = setTimeout(() => {
              this.refuse('request_timeout', callAt(method.path, next));
              if (signal) this.count(this.stats.requests, `${signal}:${GrpcStatus.DEADLINE_EXCEEDED}`);
              call.sendStatus({ code: GrpcStatus.DEADLINE_EXCEEDED, details: `request not received whole within otlp.requestTimeout (${this.opts.requestTimeoutMs} ms)`, metadata: new Metadata() });
              resetStream(next);
            }, this.opts.requestTimeoutMs);
            stopRate = this.watchMessageRate(next, arrived, reserveDeclared, () => {
              this.refuse('request_too_slow', callAt(method.path, next));
              if (signal) this.count(this.stats.requests, `${signal}:${GrpcStatus.UNAVAILABLE}`);
            }, (details, retryAfterSeconds) => {
              // UNAVAILABLE with RetryInfo: the client sends the batch again, once the budget is no longer under pressure.
              const metadata = new Metadata();
              metadata.set(STATUS_DETAILS_KEY, encodeRetryStatus(GrpcStatus.UNAVAILABLE, details, retryAfterSeconds * 1000));
              call.sendStatus({ code: GrpcStatus.UNAVAILABLE, details, metadata });
              resetStream(next);
            });
            metadataNext(metadata);
          },
          onReceiveMessage: (received: Buffer, messageNext) => {
            messages++;
            stopRate();
            message = received;
            account?.settle(received.length);
            charge();
            messageNext(received);
          },
          // The request is whole once its stream ends: grpc-js runs a unary handler only then, and until then a
          // client that sent its message and leaves the stream open would keep the call, and its bytes, for good.
          onReceiveHalfClose: (halfCloseNext) => {
            clearTimeout(timer);
            stopRate();
            halfCloseNext();
          },
          // Every call ends here. One that grpc-js refused while reading its message is counted as the receiver
          // counts its own refusals, so a batch refused for its size shows in hookwatch_otlp_requests_rejected_total.
          onCancel: () => {
            finish();
            if (answered || !signal) return;
            const code = sentStatus(next);
            const reason = code === undefined ? undefined : GRPC_JS_REFUSALS[code];
            if (reason === undefined) return;
            this.count(this.stats.requests, `${signal}:${code}`);
            this.refuse(reason, callAt(method.path, next));
          },
        });
      },
      sendStatus: (status, statusNext) => {
        answered = true;
        finish();
        statusNext(signal ? this.oneMessageRefusal(signal, status, messages, arrived, clientAborted(next), method.path, next) : status);
      },
    });
    return call;
  };

  /**
   * Checks the rate at which a call's message arrives on its HTTP/2 stream, as the OTLP/HTTP port checks a body's
   * (body-rate.ts): its size is the one its 5-byte prefix declares. A call under the minimum rate while the in-flight
   * budget is under pressure is counted as
   * request_too_slow (`counted` counts it and its outcome) and ended with `answer`'s status (its details, and the seconds its
   * client is to wait: tooSlowRetryAfterSeconds), which gives back its
   * reservation at once. `declaredLength` is told the length the prefix declares; false (the call was refused)
   * stops reading. The stream's bytes are read beside grpc-js's own reader, which keeps the stream paused
   * while it has a message to hand on: counting them never makes it read more. Returns the function that stops the
   * checks; a grpc-js that hides the stream leaves the call to otlp.requestTimeout.
   */
  private watchMessageRate(
    call: ServerInterceptingCallInterface,
    arrived: MessageArrival,
    declaredLength: (length: number) => boolean,
    counted: () => void,
    answer: (details: string, retryAfterSeconds: number) => void,
  ): () => void {
    const stream = callStream(call);
    if (!stream || typeof stream.on !== 'function') return () => {};
    let received = 0;
    let prefix = Buffer.alloc(0);
    let declared: number | undefined;
    const onData = (chunk: Buffer): void => {
      received += chunk.length;
      arrived.bytes = received;
      if (prefix.length < 5) {
        prefix = Buffer.concat([prefix, chunk.subarray(0, 5 - prefix.length)]);
        if (prefix.length === 5) {
          declared = 5 + prefix.readUInt32BE(1);
          arrived.declared = declared - 5;
          if (!declaredLength(declared - 5)) stream.off('data', onData);
        }
      }
    };
    stream.on('data', onData);
    const stop = watchBodyRate(this.opts.requestTimeoutMs, () => received, () => declared, () => this.opts.inflight.pressureLeftMs, (slow, retryAfterSeconds) => {
      stream.off('data', onData);
      counted();
      answer(tooSlowMessage('request message', slow), retryAfterSeconds);
    });
    return () => {
      stop();
      stream.off('data', onData);
    };
  }

  /**
   * Refuses a call (OverloadedError) whose `reserved` bytes would take the calls of its HTTP/2 session past half of
   * otlp.maxInflightBytes: one connection that opens streams declaring large messages and sends none of them would
   * otherwise hold the whole budget for otlp.requestTimeout, and every other client get UNAVAILABLE. A session with no call holding bytes is
   * never refused here (the smallest budget holds one call and no more).
   */
  private refuseBusySession(session: Http2Session | undefined, reserved: number): void {
    const { limitBytes } = this.opts.inflight;
    const held = session ? (this.sessionBytes.get(session) ?? 0) : 0;
    if (held > 0 && held + reserved > limitBytes / 2) {
      throw new OverloadedError(`the calls of this connection would hold more than half of otlp.maxInflightBytes (${limitBytes} bytes); retry later`);
    }
  }

  /**
   * grpc-js refuses a unary call that carries a second message, or none, with UNIMPLEMENTED and words about a
   * "server streaming method", and no hookwatch code runs: that refusal is answered as the malformed request it is
   * (INVALID_ARGUMENT, not to be retried), and counted and logged saying so. grpc-js reads no further than the second
   * message, so a call of several is said to carry more than one, not how many; one whose stream ended partway
   * through its message (`arrived`) is said to be cut short, with the length declared and the bytes received. A call whose client gave up before its message was whole
   * (`aborted`) gets that refusal too: it is counted as the OTLP/HTTP receiver counts a body its client stopped
   * sending, client_aborted (CANCELLED), not as a bad request, and nothing reaches the client. Any other status
   * passes unchanged.
   */
  private oneMessageRefusal(signal: Signal, status: SentStatus, messages: number, arrived: MessageArrival, aborted: boolean, path: string, call: ServerInterceptingCallInterface): SentStatus {
    if (status.code !== GrpcStatus.UNIMPLEMENTED || messages === 1) return status;
    if (aborted) {
      this.count(this.stats.requests, `${signal}:${GrpcStatus.CANCELLED}`);
      this.refuse('client_aborted', callAt(path, call));
      return { ...status, code: GrpcStatus.CANCELLED, details: 'the client gave up on its request before its message was whole' };
    }
    this.count(this.stats.requests, `${signal}:${GrpcStatus.INVALID_ARGUMENT}`);
    const details = messages === 0 && arrived.bytes > 0 ? cutShort(arrived) : `an Export call carries exactly one request message; this one carried ${messages === 0 ? 'none' : 'more than one'}`;
    this.refuse('bad_request', { ...callAt(path, call), problem: details });
    return { ...status, code: GrpcStatus.INVALID_ARGUMENT, details };
  }

  /** The status for a refused call, counted; UNAVAILABLE carries RetryInfo. */
  private refusal(err: unknown, at: RefusedAt): StatusObject {
    const m = mapError(err);
    this.refuse(m.reason, m.reason === 'bad_request' ? { ...at, problem: m.message } : at);
    const metadata = new Metadata();
    if (m.retryAfterSeconds !== undefined && m.grpcCode === GrpcStatus.UNAVAILABLE) {
      // RetryInfo tells the OTLP client how long to back off (specification, "OTLP/gRPC Throttling").
      metadata.set(STATUS_DETAILS_KEY, encodeRetryStatus(m.grpcCode, m.message, m.retryAfterSeconds * 1000));
    }
    return { code: m.grpcCode, details: m.message, metadata };
  }

  private count<K extends string>(map: Partial<Record<K, number>>, key: K): void {
    map[key] = (map[key] ?? 0) + 1;
  }

  /** A call or connection refused: counted for /metrics, logged (throttled) and kept for the overview (refusals.ts). */
  private refuse(reason: RejectReason, at: RefusedAt = {}, hint?: string, logged = false): void {
    this.count(this.stats.rejected, reason);
    this.refusals.note('grpc', reason, at, hint, logged);
  }

  private authorized(metadata: Metadata): boolean {
    if (!this.tokenDigest) return true;
    // One token or none: repeated entries (which one would a proxy in front act on?) are refused.
    const values = metadata.get('authorization');
    const value = values.length === 1 ? values[0] : undefined;
    // Compare digests so the time taken does not depend on where a wrong token differs, nor on its length.
    return sameSecret(authCredentials(typeof value === 'string' ? value : undefined, 'bearer') ?? '', this.tokenDigest);
  }

  private async handle(signal: Signal, call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>): Promise<void> {
    // What the decoded request holds, apart from the message bytes the interceptor's account holds.
    const decodedAccount = this.opts.inflight.open();
    /** The last try at committing the request (a hold tries again while the store is unavailable). */
    let attempt: Promise<unknown> = Promise.resolve();
    const body = call.request;
    let messageDone = (): void => {};
    this.messagesInUse.set(body, new Promise<void>((resolve) => (messageDone = resolve)));
    try {
      const raw = { signal, body, encoding: 'protobuf' as const, receivedAtMs: Date.now() };
      /** Refuses the request while the next stage cannot take it, then decodes it: until then it holds its message only. */
      const admit = async (): Promise<Consume> => {
        if (signal === 'logs') {
          this.opts.logs.admit?.(raw);
          const decoded = await decodeWithin(decodedAccount, this.opts.inflight, (bound) => decodeLogs('protobuf', body, bound, undefined, this.opts.logs.eventNames));
          return () => this.opts.logs.consumeLogs(decoded, raw);
        }
        this.opts.passThrough.admit?.(raw);
        await decodeWithin(decodedAccount, this.opts.inflight, (bound) => validatePassThroughSteps(raw, bound));
        return async () => {
          await this.opts.passThrough.consume(raw);
          return { rejected: 0, message: '' };
        };
      };
      /** Commits the request once admitted and decoded (once, however many tries a hold makes). */
      let consume: Consume | undefined;
      const { rejected, message } = await this.holds.commit(call, () => {
        const next = (async () => {
          consume ??= await admit();
          return consume();
        })();
        attempt = next;
        return next;
      });
      this.count(this.stats.requests, `${signal}:ok`);
      // Partial success has the same field numbers in all three Export*ServiceResponse messages.
      callback(null, encodeExportResponse('protobuf', rejected, message));
    } catch (err) {
      const status = this.refusal(err, { path: call.getPath(), client: call.getPeer() });
      this.count(this.stats.requests, `${signal}:${status.code}`);
      if (status.code === GrpcStatus.INTERNAL) this.opts.logger.error('otlp grpc request failed', { signal, err });
      callback(status);
    } finally {
      // A try a hold gave up on may still be running on the request: it is given back once that ends.
      const release = (): void => {
        decodedAccount.release();
        messageDone();
      };
      attempt.then(release, release);
    }
  }
}
