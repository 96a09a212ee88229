/**
 * A raw HTTP/2 gRPC client for abuse tests: it sends exactly the bytes a hostile client would (a pre-compressed
 * bomb, a partial message that never ends), which the real exporters never do.
 */
import { connect, type ClientHttp2Session } from 'node:http2';

export interface RawGrpcResult {
  /** grpc-status from the headers (trailers-only) or the trailers; undefined when the stream ended without one. */
  code: number | undefined;
  message: string;
  /** Milliseconds from the request to the end of the stream. */
  elapsedMs: number;
  /** Milliseconds from the request to the grpc-status. */
  answeredMs?: number;
  /** True when the status carried google.rpc.Status details (RetryInfo on UNAVAILABLE). */
  details: boolean;
  /** The response's HTTP :status and Allow header (a gRPC answer is 200 and has none). */
  httpStatus: number | undefined;
  allow: string | undefined;
  /** The RST_STREAM code the stream closed with (0 also for a stream that ended without one). */
  rstCode: number;
}

/** What an HTTP/2 client sends first: the connection preface and an empty SETTINGS frame. */
export const HTTP2_PREFACE = Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1'), Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])]);

/** An HTTP/2 PING frame: traffic on a connection that starts no stream. */
export const HTTP2_PING = Buffer.from([0, 0, 8, 6, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]);

/** An HTTP/2 frame (RFC 9113 section 4.1): 3-byte length, type, flags, stream id, then the payload. */
export function http2Frame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head.writeUInt8(type, 3);
  head.writeUInt8(flags, 4);
  head.writeUInt32BE(streamId, 5);
  return Buffer.concat([head, payload]);
}

/**
 * A HEADERS frame (END_HEADERS, the stream left open) starting a gRPC call on `path`: every field an HPACK literal
 * without indexing (RFC 7541 section 6.2.2), names and values under 127 bytes.
 */
export function grpcHeadersFrame(streamId: number, path: string): Buffer {
  const literal = (name: string, value: string): Buffer => Buffer.concat([Buffer.from([0, name.length]), Buffer.from(name), Buffer.from([value.length]), Buffer.from(value)]);
  const fields = { ':method': 'POST', ':scheme': 'http', ':path': path, ':authority': 'hookwatch', 'content-type': 'application/grpc', te: 'trailers' };
  const END_HEADERS = 0x4;
  return http2Frame(0x1, END_HEADERS, streamId, Buffer.concat(Object.entries(fields).map(([name, value]) => literal(name, value))));
}

/** An RST_STREAM frame with error code CANCEL (0x8): what a grpc-go client sends as it cancels a call. */
export function rstStreamCancel(streamId: number): Buffer {
  return http2Frame(0x3, 0, streamId, Buffer.from([0, 0, 0, 0x8]));
}

/** One gRPC message frame: flag byte (1 = compressed), 4-byte big-endian length, then the bytes. */
export function grpcFrame(payload: Buffer, compressed: boolean): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt8(compressed ? 1 : 0, 0);
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

/**
 * Sends `body` on `path` and resolves when the server ends the stream. With `end: false` the request is left
 * open after the body (a client holding a partial message). Rejects after `giveUpMs` if the server never answers.
 */
export async function rawGrpcCall(url: string, path: string, body: Buffer, opts: { headers?: Record<string, string>; end?: boolean; giveUpMs?: number } = {}): Promise<RawGrpcResult> {
  const session: ClientHttp2Session = connect(url);
  session.on('error', () => {});
  const started = Date.now();
  try {
    return await new Promise<RawGrpcResult>((resolve, reject) => {
      // Left open for the body whatever the method: node:http2 would end a GET's stream at its headers.
      const req = session.request({
        ':method': 'POST',
        ':path': path,
        'content-type': 'application/grpc',
        te: 'trailers',
        ...opts.headers,
      }, { endStream: false });
      let code: number | undefined;
      let message = '';
      const take = (h: Record<string, unknown>): void => {
        if (h['grpc-status'] !== undefined) {
          code = Number(h['grpc-status']);
          message = decodeURIComponent(String(h['grpc-message'] ?? ''));
          answeredMs = Date.now() - started;
          details = h['grpc-status-details-bin'] !== undefined;
        }
      };
      let answeredMs: number | undefined;
      let details = false;
      const timer = setTimeout(() => {
        req.close();
        reject(new Error(`no answer within ${opts.giveUpMs} ms`));
      }, opts.giveUpMs ?? 60_000);
      let httpStatus: number | undefined;
      let allow: string | undefined;
      req.on('response', (h) => {
        httpStatus = Number(h[':status']);
        allow = typeof h.allow === 'string' ? h.allow : undefined;
        take(h);
      });
      req.on('trailers', take);
      req.on('data', () => {});
      req.on('error', () => {});
      req.on('close', () => {
        clearTimeout(timer);
        resolve({ code, message, details, httpStatus, allow, rstCode: req.rstCode ?? 0, elapsedMs: Date.now() - started, ...(answeredMs !== undefined ? { answeredMs } : {}) });
      });
      req.write(body);
      if (opts.end !== false) req.end();
    });
  } finally {
    session.destroy();
  }
}
