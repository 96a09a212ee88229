import { isAscii, isUtf8 } from 'node:buffer';
import { StringDecoder } from 'node:string_decoder';

/**
 * Counts the UTF-16 code units of a UTF-8 byte stream decoded as a StringDecoder decodes it (an invalid sequence
 * as U+FFFD), which is what Claude Code measures of a hook's output, and decodes no more than it must: a chunk of
 * valid UTF-8 (which begins and ends between two characters) is counted from its bytes, without making a string of
 * it. Past what a tool keeps of an output only its length is wanted, and a hook such as `yes` prints gigabytes a
 * second: decoding all of them to count them kept a core busy.
 */
export class Utf16Counter {
  private readonly decoder = new StringDecoder('utf8');
  /** Whether the decoder may hold the first bytes of a character from the chunk before. */
  private pending = false;
  /** The code units counted so far. */
  units = 0;
  /**
   * The code points among what count() was given (not text(): its caller has the text), a character outside the BMP
   * as one where it is two code units.
   */
  countedCodePoints = 0;

  /** Counts `chunk` and returns it decoded (a character it begins and the next chunk ends is given with that one). */
  text(chunk: Buffer): string {
    const text = this.decoder.write(chunk);
    this.units += text.length;
    this.pending = true;
    return text;
  }

  /**
   * Counts `chunk`, decoding only its edges: the continuation bytes it begins with (up to 3, the end of a character
   * the chunk before began) and the first bytes of a character it ends with. What lies between is counted from its
   * bytes when it is valid UTF-8 (native checks, no string made), and decoded otherwise.
   */
  count(chunk: Buffer): void {
    let start = 0;
    while (start < 3 && start < chunk.length && continues(chunk[start])) start++;
    const end = Math.max(start, chunk.length - unfinishedTail(chunk));
    if (start > 0) this.decodeCounted(chunk.subarray(0, start));
    const middle = chunk.subarray(start, end);
    if (middle.length > 0 && isUtf8(middle)) {
      // The middle begins with the first byte of a character: what the decoder still holds of one before it is
      // left unfinished, and decodes as it does at the end of the stream.
      if (this.pending) this.countedCodePoints += codePoints(this.end());
      const counted = isAscii(middle) ? { units: middle.length, codePoints: middle.length } : validUtf8Counts(middle);
      this.units += counted.units;
      this.countedCodePoints += counted.codePoints;
    } else if (middle.length > 0) this.decodeCounted(middle);
    if (end < chunk.length) this.decodeCounted(chunk.subarray(end));
  }

  private decodeCounted(bytes: Buffer): void {
    this.countedCodePoints += codePoints(this.text(bytes));
  }

  /** Ends the stream: counts and returns what the decoder held of an unfinished character. */
  end(): string {
    const rest = this.decoder.end();
    this.units += rest.length;
    this.pending = false;
    return rest;
  }
}

/** Whether `byte` continues a UTF-8 character (10xxxxxx) rather than starting one. */
function continues(byte: number | undefined): boolean {
  return byte !== undefined && (byte & 0xc0) === 0x80;
}

/**
 * How many bytes at the end of `bytes` begin a character they do not finish: a lead byte and the continuation bytes
 * after it, fewer than its sequence needs. 0 when the last character is whole (or the end is not UTF-8 at all).
 */
function unfinishedTail(bytes: Buffer): number {
  for (let back = 1; back <= 4 && back <= bytes.length; back++) {
    const byte = bytes[bytes.length - back] ?? 0;
    if (continues(byte)) continue;
    const length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return back < length ? back : 0;
  }
  return 0;
}

/** How many of the four bytes of a word have their top bit set in `bits` (a mask of 0x80 per byte at most). */
function topBits(bits: number): number {
  return Math.imul(bits >>> 7, 0x01010101) >>> 24;
}

/**
 * The code points of a string from StringDecoder, which never splits a surrogate pair: its length less its pairs
 * (a lone surrogate, from a JSON escape say, cannot come out of UTF-8).
 */
function codePoints(text: string): number {
  let pairs = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) pairs++;
  }
  return text.length - pairs;
}

/**
 * The UTF-16 length and the code points of valid UTF-8: a code point for each character's first byte, a code unit
 * too, two for a character of four bytes (outside the BMP, a surrogate pair); continuation bytes (10xxxxxx) count
 * nothing. Four bytes at a time: in each byte, bit 7 set and bit 6 clear marks a continuation byte, bits 7 to 4 all
 * set the lead byte of four.
 */
function validUtf8Counts(bytes: Buffer): { units: number; codePoints: number } {
  let leads = 0;
  let fourByteLeads = 0;
  const one = (byte: number | undefined): void => {
    if (continues(byte)) return;
    leads++;
    if ((byte ?? 0) >= 0xf0) fourByteLeads++;
  };
  const aligned = Math.min(bytes.length, (4 - (bytes.byteOffset % 4)) % 4);
  const words = Math.floor((bytes.length - aligned) / 4);
  for (let i = 0; i < aligned; i++) one(bytes[i]);
  const view = words > 0 ? new Uint32Array(bytes.buffer, bytes.byteOffset + aligned, words) : new Uint32Array(0);
  let continuation = 0;
  for (let w = 0; w < words; w++) {
    const word = view[w] ?? 0;
    continuation += topBits(word & ~(word << 1) & 0x80808080);
    fourByteLeads += topBits(word & (word << 1) & (word << 2) & (word << 3) & 0x80808080);
  }
  leads += words * 4 - continuation;
  for (let i = aligned + words * 4; i < bytes.length; i++) one(bytes[i]);
  return { units: leads + fourByteLeads, codePoints: leads };
}
