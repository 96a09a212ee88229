/**
 * Reading a file a setting names (the config file, a TLS certificate or key) no further than a bound: a device
 * (/dev/zero) or a log file named by mistake is refused once past it, instead of filling memory or, read again
 * while hookwatch runs, holding it up. A pipe is read as a file is. The file is read in chunks, so a small one
 * takes no more memory than it holds.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { formatSize } from './format.ts';

const CHUNK_BYTES = 64 * 1024;

/** A file holding more than the bound; the message says so, and no more of the file. */
export class FileTooLargeError extends Error {
  override name = 'FileTooLargeError';
}

/** What is read so far, in chunks filled one after the other; add() counts the bytes read into the free room. */
class Chunks {
  private readonly filled: Buffer[] = [];
  /** The chunk being filled, and how much of it is. */
  buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  offset = 0;
  private length = 0;
  private readonly maxBytes: number;
  private readonly holding: string;

  constructor(maxBytes: number, holding: string) {
    this.maxBytes = maxBytes;
    this.holding = holding;
  }

  /** What the next read may fill. */
  get room(): number {
    return CHUNK_BYTES - this.offset;
  }

  /** Counts what a read put at `offset`; false at the end of the file. */
  add(bytesRead: number): boolean {
    this.offset += bytesRead;
    this.length += bytesRead;
    if (this.length > this.maxBytes) throw new FileTooLargeError(`it holds more than ${formatSize(this.maxBytes)}, more than any ${this.holding} needs: is it the file meant?`);
    if (this.offset === CHUNK_BYTES) {
      this.filled.push(this.buffer);
      this.buffer = Buffer.allocUnsafe(CHUNK_BYTES);
      this.offset = 0;
    }
    return bytesRead > 0;
  }

  whole(): Buffer {
    return Buffer.concat([...this.filled, this.buffer.subarray(0, this.offset)], this.length);
  }
}

/**
 * The bytes of `path`, or FileTooLargeError once past `maxBytes` (its message names `holding`, what the file is
 * for: "configuration", "PEM file"); a file that cannot be opened or read throws the file system's error.
 */
export function readBoundedSync(path: string, maxBytes: number, holding: string): Buffer {
  const fd = openSync(path, 'r');
  try {
    const chunks = new Chunks(maxBytes, holding);
    while (chunks.add(readSync(fd, chunks.buffer, chunks.offset, chunks.room, null)));
    return chunks.whole();
  } finally {
    closeSync(fd);
  }
}

/** readBoundedSync without blocking the process while it reads. */
export async function readBounded(path: string, maxBytes: number, holding: string): Promise<Buffer> {
  const file = await open(path, 'r');
  try {
    const chunks = new Chunks(maxBytes, holding);
    while (chunks.add((await file.read(chunks.buffer, chunks.offset, chunks.room, null)).bytesRead));
    return chunks.whole();
  } finally {
    await file.close();
  }
}
