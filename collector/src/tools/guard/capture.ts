import { closeSync, ftruncateSync, openSync, writeSync } from 'node:fs';

import { Utf16Counter } from '../common/utf16-count.ts';

/** Stdout kept in memory (as raw bytes, so output within budget passes unchanged); past it, it goes to a file. */
export const DEFAULT_SPILL_BYTES = 8 * 1024 * 1024;

/**
 * What a hook wrote to stdout: whole in memory (`held`); spilled to a file with only its head in memory
 * (`spilled`), the file cut at `cutAt` bytes when the output went on past what may be saved; or passed on as it
 * came (`passed`), when past the memory's share there was no file to spill it to (`problem` says why).
 */
export type CapturedStdout =
  | { kind: 'held'; bytes: Buffer }
  | { kind: 'spilled'; path: string; head: string; chars: number; cutAt: number | undefined }
  | { kind: 'passed'; problem: string };

/** How a StdoutCapture keeps what it is given. */
export interface CaptureOptions {
  /** Bytes held in memory before the rest goes to a file. */
  spillBytes: number;
  /** Most bytes written to that file: past them the output is only counted (at least spillBytes). */
  saveBytes: number;
  headChars: number;
  /** The file to spill to; throws when there can be none (a folder that cannot be made, or is not safe). */
  spillPath: () => string;
  /** Writes to the guard's stdout, once nothing can be spilled; resolves once written (or dropped), never rejects. */
  passOn: (data: Buffer) => Promise<void>;
}

/**
 * Collects a hook's stdout in bounded memory. Up to `spillBytes` the raw bytes are kept; past that they are
 * written to `spillPath()` as they arrive, up to `saveBytes` (so that no hook fills the disk, `yes` included), and
 * only the first `headChars` code units stay in memory, while the UTF-16 length of the whole stream is still
 * counted (that is what Claude Code would have measured). Where no spill file can be made, what is held and all
 * that follows is passed on to stdout as it comes, unchanged: held on, it would grow with the output.
 */
export class StdoutCapture {
  private chunks: Buffer[] = [];
  private bytes = 0;
  /** Counts the UTF-16 length of all the output; what is decoded of it is only the head. */
  private readonly counter = new Utf16Counter();
  private head = '';
  private fd: number | undefined;
  private path: string | undefined;
  /**
   * Bytes written to the spill file, and where it was cut (at most saveBytes, or where a write failed: a full
   * disk), always between two characters: the last bytes written (up to 3) tell whether one is left unfinished.
   */
  private saved = 0;
  private tail = Buffer.alloc(0);
  private cutAt: number | undefined;
  /** Why nothing could be spilled, once output is passed on instead. */
  private problem: string | undefined;
  /** The write of what was passed on last. */
  private writing: Promise<void> = Promise.resolve();
  private readonly options: CaptureOptions;

  constructor(options: CaptureOptions) {
    this.options = { ...options, saveBytes: Math.max(options.saveBytes, options.spillBytes) };
  }

  /**
   * Takes the next chunk of stdout. Returns the write of a chunk passed on: no more should be read until it
   * resolves, so that a slow reader of the guard's stdout holds the hook back rather than fill memory.
   */
  push(chunk: Buffer): Promise<void> | undefined {
    if (this.problem !== undefined) return this.pass(chunk);
    if (this.head.length < this.options.headChars) this.head += this.counter.text(chunk).slice(0, this.options.headChars - this.head.length);
    else this.counter.count(chunk);
    if (this.fd !== undefined) {
      this.save(chunk);
      return undefined;
    }
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    if (this.bytes <= this.options.spillBytes) return undefined;
    try {
      this.path = this.options.spillPath();
      this.fd = openSync(this.path, 'wx', 0o600);
    } catch (error) {
      // Nowhere to put it: passed on as written, as Claude Code would have had it, rather than held or lost.
      this.problem = (error as Error).message;
      const held = Buffer.concat(this.chunks, this.bytes);
      this.chunks = [];
      return this.pass(held);
    }
    for (const kept of this.chunks) this.save(kept);
    this.chunks = [];
    return undefined;
  }

  /** Waits for what was passed on to be written. */
  passedOn(): Promise<void> {
    return this.writing;
  }

  finish(): CapturedStdout {
    if (this.problem !== undefined) return { kind: 'passed', problem: this.problem };
    const rest = this.counter.end();
    if (this.fd !== undefined && this.path !== undefined) {
      closeSync(this.fd);
      this.fd = undefined;
      if (this.head.length < this.options.headChars) this.head += rest.slice(0, this.options.headChars - this.head.length);
      return { kind: 'spilled', path: this.path, head: this.head, chars: this.counter.units, cutAt: this.cutAt };
    }
    return { kind: 'held', bytes: Buffer.concat(this.chunks, this.bytes) };
  }

  private pass(data: Buffer): Promise<void> {
    this.writing = this.writing.then(() => this.options.passOn(data)).catch(() => undefined);
    return this.writing;
  }

  /**
   * Writes `chunk` to the spill file, as far as saveBytes go; a write that fails (a full disk) cuts the file there.
   * A cut falls between two characters, so the file is valid UTF-8 where the output is: back over the start of
   * one that would not be written whole (even one begun in a chunk already written).
   */
  private save(chunk: Buffer): void {
    if (this.fd === undefined || this.cutAt !== undefined) return;
    const room = this.options.saveBytes - this.saved;
    let data = chunk.length > room ? chunk.subarray(0, room) : chunk;
    try {
      while (data.length > 0) {
        const written = writeSync(this.fd, data);
        this.keep(data.subarray(0, written));
        data = data.subarray(written);
      }
    } catch {
      this.cut();
      return;
    }
    if (chunk.length > room) this.cut();
  }

  /** Counts bytes written to the spill file, remembering the last 3 (the most an unfinished character leaves). */
  private keep(written: Buffer): void {
    this.saved += written.length;
    this.tail = Buffer.concat([this.tail, written.subarray(-3)]).subarray(-3);
  }

  /** Ends the spill file where it is, less the start of a character not written whole. */
  private cut(): void {
    const unfinished = unfinishedBytes(this.tail);
    if (unfinished > 0 && this.fd !== undefined) {
      try {
        ftruncateSync(this.fd, this.saved - unfinished);
        this.saved -= unfinished;
      } catch {
        // Left as written: the count below stays that of the bytes in the file.
      }
    }
    this.cutAt = this.saved;
  }
}

/**
 * How many bytes at the end of `bytes` begin a UTF-8 character they do not finish: the continuation bytes
 * (10xxxxxx) at the end and the lead byte before them, when its sequence is longer than what follows it.
 */
export function unfinishedBytes(bytes: Buffer): number {
  for (let i = bytes.length - 1; i >= 0 && i >= bytes.length - 4; i--) {
    const byte = bytes[i] ?? 0;
    if ((byte & 0xc0) === 0x80) continue;
    const length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return bytes.length - i < length ? bytes.length - i : 0;
  }
  return 0;
}
