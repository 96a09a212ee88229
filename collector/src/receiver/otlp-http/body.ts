/**
 * Reads an OTLP request body within a size limit measured after decompression, inflating while it streams in:
 * a gzip bomb is stopped as soon as its output passes the limit, so it costs at most that many bytes, never its
 * full inflated size, and only once the process-wide in-flight budget has room for it.
 */
import type { IncomingMessage } from 'node:http';
import type { Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate, createZstdDecompress } from 'node:zlib';
import { DecodeError } from '../../otlp/model.ts';
import { TooLargeError, UnsupportedMediaTypeError } from '../../pipeline/errors.ts';
import { echoed } from '../../request-error.ts';
import type { InflightAccount } from '../inflight.ts';
import { RequestTooSlowError, tooSlowMessage, watchBodyRate } from '../body-rate.ts';

/**
 * Inflated output is handed over in chunks of this size. zlib's default of 16 KiB made a 340 KB batch 21 trips
 * through the thread pool and the event loop, which cost three times the inflating itself (1.4 ms of CPU per
 * batch instead of 0.47); the size check still runs on every chunk, so a bomb is stopped within one chunk.
 */
const INFLATE_CHUNK_BYTES = 256 * 1024;

/**
 * A Content-Encoding a port may take besides identity. OTLP takes gzip and deflate (what OTLP exporters send);
 * the silence API also takes br and zstd, as Express's JSON parser did before it read bodies this way.
 */
export type BodyCoding = 'gzip' | 'deflate' | 'br' | 'zstd';

/** What the OTLP receiver takes. */
const OTLP_CODINGS: readonly BodyCoding[] = ['gzip', 'deflate'];

/** The decompressor for a Content-Encoding; `bounded` when its ratio is (deflate's, DEFLATE_MAX_RATIO). */
function inflater(contentEncoding: string | undefined, codings: readonly BodyCoding[]): { zlib: Transform; bounded: boolean } | undefined {
  const enc = (contentEncoding ?? '').trim().toLowerCase();
  if (enc === '' || enc === 'identity') return undefined;
  const coding = enc === 'x-gzip' ? 'gzip' : enc;
  if (codings.includes(coding as BodyCoding)) {
    if (coding === 'gzip') return { zlib: createGunzip({ chunkSize: INFLATE_CHUNK_BYTES }), bounded: true };
    if (coding === 'deflate') return { zlib: createInflate({ chunkSize: INFLATE_CHUNK_BYTES }), bounded: true };
    if (coding === 'br') return { zlib: createBrotliDecompress({ chunkSize: INFLATE_CHUNK_BYTES }), bounded: false };
    if (coding === 'zstd') return { zlib: createZstdDecompress({ chunkSize: INFLATE_CHUNK_BYTES }), bounded: false };
  }
  throw new UnsupportedMediaTypeError(`Content-Encoding ${echoed(enc)} is not supported (use ${codings.join(', ')} or none)`);
}

/**
 * The client closed the connection before its body was whole (or Node closed it at otlp.requestTimeout): no
 * answer reaches it, and nothing in the body was wrong.
 */
export class ClientAbortedError extends Error {
  override name = 'ClientAbortedError';
}

/** Deflate cannot expand more than 1032:1 (RFC 1951 blocks), so a declared compressed length bounds the output. */
const DEFLATE_MAX_RATIO = 1032;

/**
 * The whole body, decompressed per Content-Encoding (identity or one of `codings`; any other throws
 * UnsupportedMediaTypeError). Refuses past `limit` bytes (raw or inflated) with TooLargeError, as soon as that
 * many arrived or were inflated, never waiting for the body's end. Before a byte is read, the most a body with a
 * Content-Length can grow to (its declared length, times 1032 when deflated, at most `limit`) is reserved from
 * `account`, which throws OverloadedError when the process holds too much already: such a request is refused whole
 * or admitted whole, never half inflated. A chunked body is charged as its bytes arrive (inflated, when
 * compressed), and refused with OverloadedError at the chunk the budget cannot take. With `timeoutMs`, a body arriving under the minimum rate while the budget is under pressure
 * (body-rate.ts, for a request timeout of `timeoutMs`) is refused with RequestTooSlowError, and reading stops; without it (a small body bounded
 * by the HTTP port's own request timeout) the rate is not watched.
 */
export function readBody(req: IncomingMessage, limit: number, account: InflightAccount, timeoutMs: number | undefined, codings: readonly BodyCoding[] = OTLP_CODINGS): Promise<Buffer> {
  const encoding = req.headers['content-encoding'];
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    return Promise.reject(new TooLargeError(`request body of ${declared} bytes exceeds the limit of ${limit} bytes`));
  }
  let zlib: Transform | undefined;
  const known = req.headers['content-length'] !== undefined && Number.isFinite(declared);
  try {
    const decoder = inflater(encoding, codings);
    zlib = decoder?.zlib;
    // Brotli and zstd have no such bound on their ratio: the limit is reserved.
    const most = decoder === undefined ? declared : decoder.bounded ? declared * DEFLATE_MAX_RATIO : limit;
    // A body of unknown length (chunked) is charged as its bytes arrive (keep): reserving the limit up front let a
    // few slow chunked uploads hold the whole budget while they had sent almost nothing.
    if (known) account.take(Math.min(limit, most));
  } catch (err) {
    zlib?.destroy();
    return Promise.reject(err as Error);
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let rawSize = 0;
    let size = 0;
    let done = false;
    const stopWatch =
      timeoutMs === undefined
        ? noop
        : watchBodyRate(timeoutMs, () => rawSize, () => (known ? declared : undefined), () => account.pressureLeftMs, (slow, retryAfterSeconds) => {
            // Nothing more of it is read: the answer closes the connection (net/unread-body.ts).
            req.pause();
            fail(new RequestTooSlowError(tooSlowMessage('request body', slow), retryAfterSeconds));
          });
    const fail = (err: Error): void => {
      if (done) return;
      done = true;
      stopWatch();
      chunks.length = 0;
      if (zlib) {
        req.unpipe(zlib);
        zlib.destroy();
      }
      reject(err);
    };
    const keep = (chunk: Buffer): void => {
      if (done) return;
      size += chunk.length;
      if (size > limit) {
        fail(new TooLargeError(`request body exceeds the limit of ${limit} bytes${zlib ? ' after decompression' : ''}`));
        return;
      }
      if (!known) {
        try {
          account.take(chunk.length);
        } catch (err) {
          // Nothing more of it is read: the answer closes the connection (net/unread-body.ts).
          req.pause();
          fail(err as Error);
          return;
        }
      }
      chunks.push(chunk);
    };
    const finish = (): void => {
      if (done) return;
      done = true;
      stopWatch();
      account.settle(size);
      const one = chunks[0];
      // A lone chunk of the inflater is a view of its whole 256 KiB output buffer: copied when much smaller, so a
      // small body holds no more memory than the in-flight budget is charged for it.
      resolve(chunks.length === 1 && one !== undefined ? (one.buffer.byteLength > 2 * one.length + 4096 ? Buffer.from(one) : one) : Buffer.concat(chunks, size));
    };
    req.on('data', (chunk: Buffer) => {
      rawSize += chunk.length;
      if (rawSize > limit) fail(new TooLargeError(`request body exceeds the limit of ${limit} bytes`));
    });
    // The body has arrived: inflating the rest of it (on the thread pool) is not the client's doing.
    req.on('end', stopWatch);
    req.on('error', (err) => fail(err));
    req.on('aborted', () => fail(new ClientAbortedError('client aborted the request')));
    if (zlib) {
      zlib.on('data', keep);
      zlib.on('end', finish);
      zlib.on('error', (err: Error) => fail(new DecodeError(`body is not valid ${String(encoding).trim().toLowerCase()}: ${err.message}`)));
      req.pipe(zlib);
    } else {
      req.on('data', keep);
      req.on('end', finish);
    }
  });
}

function noop(): void {}
