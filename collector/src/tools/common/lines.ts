import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';

import { MAX_LINE_BYTES } from './limits.ts';

/** One line of a file, without its line terminator (nor, on the first line, a UTF-8 byte order mark). */
export interface FileLine {
  /** 1-based line number. */
  lineNumber: number;
  /** The bytes of the line; a view into the read buffer when possible, so do not keep it past the iteration. */
  bytes: Buffer;
  /** True for a last line that had no terminating newline (often a record cut off mid-write). */
  unterminated: boolean;
}

/** Counters a line reader fills in while it runs. */
export interface LineStats {
  lines: number;
  bytes: number;
  /** Lines longer than the limit, skipped without being buffered. */
  oversizedLines: number;
  /** Number of the first of them, to name in a report. */
  firstOversizedLine?: number;
}

/** Options of readLines. */
export interface ReadLinesOptions {
  maxLineBytes?: number;
  /** Size of each read from disk. */
  chunkBytes?: number;
  stats?: LineStats;
}

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;
/** What an editor or a Windows tool may put before the first line of a UTF-8 file. */
const BYTE_ORDER_MARK = Buffer.from([0xef, 0xbb, 0xbf]);
/** The byte order marks of UTF-16 (little- and big-endian), as PowerShell's `>` writes a file. */
const UTF16_MARKS: Record<string, string> = { fffe: 'FF FE', feff: 'FE FF' };

/**
 * Streams a file line by line in bounded memory. Unlike node:readline, which buffers a line however long it
 * is, a line over `maxLineBytes` is dropped piece by piece as it streams past and only counted, so one runaway
 * record cannot take the process down. Memory stays at about one read chunk plus one kept line. `source` is a
 * file's path or a stream already open (standard input), read the same way. A file that starts with a UTF-16
 * byte order mark is refused (thrown) before any line: split at its bytes, its lines would read as garbage.
 */
export async function* readLines(source: string | Readable, options: ReadLinesOptions = {}): AsyncGenerator<FileLine> {
  const maxLineBytes = options.maxLineBytes ?? MAX_LINE_BYTES;
  const stats = options.stats ?? { lines: 0, bytes: 0, oversizedLines: 0 };
  const stream = typeof source === 'string' ? createReadStream(source, { highWaterMark: options.chunkBytes ?? 1024 * 1024 }) : source;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let skipping = false;
  let lineNumber = 0;
  /** The first two bytes, until known: where a UTF-16 byte order mark would be. */
  let head: Buffer | undefined = Buffer.alloc(0);

  const finishLine = (tail: Buffer, unterminated: boolean): FileLine | undefined => {
    lineNumber++;
    stats.lines++;
    if (skipping || pendingBytes + tail.length > maxLineBytes) {
      stats.oversizedLines++;
      stats.firstOversizedLine ??= lineNumber;
      skipping = false;
      pending = [];
      pendingBytes = 0;
      return undefined;
    }
    let bytes = pending.length === 0 ? tail : Buffer.concat([...pending, tail], pendingBytes + tail.length);
    pending = [];
    pendingBytes = 0;
    if (bytes.length > 0 && bytes[bytes.length - 1] === CARRIAGE_RETURN) bytes = bytes.subarray(0, bytes.length - 1);
    if (lineNumber === 1 && bytes.subarray(0, BYTE_ORDER_MARK.length).equals(BYTE_ORDER_MARK)) bytes = bytes.subarray(BYTE_ORDER_MARK.length);
    return { lineNumber, bytes, unterminated };
  };

  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      stats.bytes += chunk.length;
      if (head !== undefined) {
        head = Buffer.concat([head, chunk.subarray(0, 2 - head.length)]);
        if (head.length === 2) {
          const mark = UTF16_MARKS[head.toString('hex')];
          if (mark !== undefined) throw new Error(`UTF-16 encoded, not UTF-8 (byte order mark ${mark}); Claude Code writes transcripts in UTF-8`);
          head = undefined;
        }
      }
      let start = 0;
      while (start < chunk.length) {
        const newline = chunk.indexOf(NEWLINE, start);
        if (newline === -1) {
          const rest = chunk.subarray(start);
          if (!skipping && pendingBytes + rest.length <= maxLineBytes) {
            // Copy: the stream may reuse its buffer, and a view would pin the whole chunk.
            pending.push(Buffer.from(rest));
            pendingBytes += rest.length;
          } else {
            skipping = true;
            pending = [];
            pendingBytes = 0;
          }
          break;
        }
        const line = finishLine(chunk.subarray(start, newline), false);
        if (line) yield line;
        start = newline + 1;
      }
    }
    if (skipping || pendingBytes > 0) {
      const line = finishLine(Buffer.alloc(0), true);
      if (line) yield line;
    }
  } finally {
    stream.destroy();
  }
}
