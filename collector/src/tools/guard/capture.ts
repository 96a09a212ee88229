import { closeSync, openSync, writeSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';

/** Stdout kept in memory (as raw bytes, so output within budget passes unchanged); past it, it goes to a file. */
export const DEFAULT_SPILL_BYTES = 8 * 1024 * 1024;

/** What a hook wrote to stdout: whole in memory, or spilled to a file with only its head in memory. */
export type CapturedStdout =
  | { spilled: false; bytes: Buffer; text: string }
  | { spilled: true; path: string; head: string; chars: number };

/**
 * Collects a hook's stdout in bounded memory. Up to `spillBytes` the raw bytes are kept; past that they are
 * written to `spillPath()` as they arrive and only the first `headChars` code units stay in memory, while the
 * UTF-16 length of the whole stream is still counted (that is what Claude Code would have measured).
 */
export class StdoutCapture {
  private chunks: Buffer[] = [];
  private bytes = 0;
  private readonly decoder = new StringDecoder('utf8');
  private head = '';
  private chars = 0;
  private fd: number | undefined;
  private path: string | undefined;
  private spillFailed = false;
  private readonly spillBytes: number;
  private readonly headChars: number;
  private readonly spillPath: () => string;

  constructor(options: { spillBytes: number; headChars: number; spillPath: () => string }) {
    this.spillBytes = options.spillBytes;
    this.headChars = options.headChars;
    this.spillPath = options.spillPath;
  }

  push(chunk: Buffer): void {
    const text = this.decoder.write(chunk);
    this.chars += text.length;
    if (this.head.length < this.headChars) this.head += text.slice(0, this.headChars - this.head.length);
    if (this.fd !== undefined) {
      writeSync(this.fd, chunk);
      return;
    }
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    if (this.bytes > this.spillBytes && !this.spillFailed) {
      try {
        this.path = this.spillPath();
        this.fd = openSync(this.path, 'wx', 0o600);
      } catch {
        // Nowhere to put it: keep it in memory, as Claude Code itself would, rather than lose the hook's output.
        this.spillFailed = true;
        return;
      }
      for (const kept of this.chunks) writeSync(this.fd, kept);
      this.chunks = [];
    }
  }

  finish(): CapturedStdout {
    const rest = this.decoder.end();
    this.chars += rest.length;
    if (this.fd !== undefined && this.path !== undefined) {
      closeSync(this.fd);
      if (this.head.length < this.headChars) this.head += rest.slice(0, this.headChars - this.head.length);
      return { spilled: true, path: this.path, head: this.head, chars: this.chars };
    }
    const bytes = Buffer.concat(this.chunks, this.bytes);
    return { spilled: false, bytes, text: bytes.toString('utf8') };
  }
}
