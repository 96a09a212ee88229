/**
 * Reads an OTLP request body within a size limit measured after decompression, inflating while it streams in:
 * a gzip bomb is stopped as soon as its output passes the limit, so it costs at most that many bytes, never its
 * full inflated size, and only once the process-wide in-flight budget has room for it.
 */
import type { IncomingMessage } from 'node:http';
import { createGunzip, createInflate, type Gunzip, type Inflate } from 'node:zlib';
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

function inflater(contentEncoding: string | undefined): Gunzip | Inflate | undefined {
  const enc = (contentEncoding ?? '').trim().toLowerCase();
  if (enc === '' || enc === 'identity') return undefined;
  if (enc === 'gzip' || enc === 'x-gzip') return createGunzip({ chunkSize: INFLATE_CHUNK_BYTES });
  if (enc === 'deflate') return createInflate({ chunkSize: INFLATE_CHUNK_BYTES });
  throw new UnsupportedMediaTypeError(`Content-Encoding ${echoed(enc)} is not supported (use gzip or none)`);
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
 * The whole body, decompressed per Content-Encoding (gzip, deflate, identity). Refuses past `limit` bytes
 * (raw or inflated) with TooLargeError. Before a byte is read, the most the body can grow to (its declared
 * length, times 1032 when compressed, at most `limit`) is reserved from `account`, which throws OverloadedError
 * when the process holds too much already: a request is refused whole or admitted whole, never half inflated.
 * A body arriving under the minimum rate (body-rate.ts, for a request timeout of `timeoutMs`) is refused with
 * RequestTooSlowError, and reading stops.
 */
export function readBody(req: IncomingMessage, limit: number, account: InflightAccount, timeoutMs: number): Promise<Buffer> {
  const encoding = req.headers['content-encoding'];
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    return Promise.reject(new TooLargeError(`request body of ${declared} bytes exceeds the limit of ${limit} bytes`));
  }
  let zlib: Gunzip | Inflate | undefined;
  const known = req.headers['content-length'] !== undefined && Number.isFinite(declared);
  try {
    zlib = inflater(encoding);
    account.take(known ? Math.min(limit, zlib ? declared * DEFLATE_MAX_RATIO : declared) : limit);
  } catch (err) {
    zlib?.destroy();
    return Promise.reject(err as Error);
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let rawSize = 0;
    let size = 0;
    let done = false;
    const stopWatch = watchBodyRate(timeoutMs, () => rawSize, () => (known ? declared : undefined), (slow) => {
      // Nothing more of it is read: the answer closes the connection (net/unread-body.ts).
      req.pause();
      fail(new RequestTooSlowError(tooSlowMessage('request body', slow)));
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
    req.on('error', (err) => fail(err));
    req.on('aborted', () => fail(new ClientAbortedError('client aborted the request')));
    if (zlib) {
      zlib.on('data', keep);
      zlib.on('end', finish);
      zlib.on('error', (err) => fail(new DecodeError(`body is not valid ${String(encoding).trim().toLowerCase()}: ${err.message}`)));
      req.pipe(zlib);
    } else {
      req.on('data', keep);
      req.on('end', finish);
    }
  });
}
