/**
 * Reads an OTLP request body within a size limit measured after decompression. A gzip bomb is stopped as
 * soon as its output passes the limit, without inflating the rest.
 */
import type { IncomingMessage } from 'node:http';
import { promisify } from 'node:util';
import { gunzip, inflate } from 'node:zlib';
import { DecodeError } from '../../otlp/model.ts';
import { TooLargeError, UnsupportedMediaTypeError } from '../../pipeline/errors.ts';

const gunzipAsync = promisify(gunzip);
const inflateAsync = promisify(inflate);

/** Reads the raw (possibly compressed) body; refuses past `limit` bytes without buffering more. */
export function readRaw(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      reject(new TooLargeError(`request body of ${declared} bytes exceeds the limit of ${limit} bytes`));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    req.on('data', (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > limit) {
        done = true;
        chunks.length = 0;
        reject(new TooLargeError(`request body exceeds the limit of ${limit} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (done) return;
      done = true;
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    });
    req.on('error', (err) => {
      if (done) return;
      done = true;
      reject(err);
    });
    req.on('aborted', () => {
      if (done) return;
      done = true;
      reject(new DecodeError('client aborted the request'));
    });
  });
}

/** Undoes Content-Encoding (gzip, deflate, identity) within `limit` bytes of output. */
export async function decompress(raw: Buffer, contentEncoding: string | undefined, limit: number): Promise<Buffer> {
  const enc = (contentEncoding ?? '').trim().toLowerCase();
  if (enc === '' || enc === 'identity') return raw;
  const tooLarge = (): TooLargeError => new TooLargeError(`request body exceeds the limit of ${limit} bytes after decompression`);
  try {
    if (enc === 'gzip' || enc === 'x-gzip') return await gunzipAsync(raw, { maxOutputLength: limit });
    if (enc === 'deflate') return await inflateAsync(raw, { maxOutputLength: limit });
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) throw tooLarge();
    throw new DecodeError(`body is not valid ${enc}: ${(err as Error).message}`);
  }
  throw new UnsupportedMediaTypeError(`Content-Encoding ${JSON.stringify(enc)} is not supported (use gzip or none)`);
}
