/**
 * A bounds-checked protobuf reader for ExportLogsServiceRequest. Hand-written from the field numbers in
 * opentelemetry-proto (no npm package ships the current .proto files); it decodes only what hookwatch reads
 * and skips the rest, so unknown or newer fields pass through harmlessly.
 */
import type { DecodeBudget} from './model.ts';
import { runToEnd } from '../paced.ts';
import { DECODE_SLICE_BYTES, DECODED_BYTES, DecodeError, MAX_ANYVALUE_DEPTH, unbounded, type AnyValue, type Attributes, type KvList, type LogRecord, type LogsRequest, type ResourceLogs, type ScopeLogs } from './model.ts';

/** Slots of a StringCache (a power of two). */
const STRING_SLOTS = 1024;
/** Longer strings are decoded each time: comparing their bytes would cost about as much. */
const STRING_CACHE_MAX_BYTES = 128;

/**
 * The strings already decoded from one request body, by where their bytes are. Attribute keys, and most values
 * (user, session, team, hook names, small counts), repeat on every record of a batch: a repeat is found by
 * comparing bytes in place and shares the string decoded first, instead of decoding and allocating it again.
 * Direct-mapped by a hash of the bytes, so a batch of unique values costs one hash per string and evicts freely.
 */
class StringCache {
  /** The body itself, read four bytes at a time when hashing and comparing. */
  readonly words: DataView;
  readonly starts = new Int32Array(STRING_SLOTS);
  readonly lengths = new Int32Array(STRING_SLOTS).fill(-1);
  readonly values: string[] = new Array<string>(STRING_SLOTS).fill('');

  constructor(buf: Buffer) {
    this.words = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }
}

function utf8(buf: Buffer, start: number, end: number): string {
  // Lenient like most receivers' string views: invalid UTF-8 becomes U+FFFD instead of failing the batch.
  return (buf as unknown as { utf8Slice(start: number, end: number): string }).utf8Slice(start, end);
}

export class Reader {
  pos: number;
  readonly buf: Buffer;
  /** Where the message being read ends; `enter` narrows it to a nested field and `leave` restores it. */
  end: number;
  /** Strings decoded so far from `buf`, shared by every Reader of the same body. */
  readonly strings: StringCache | undefined;
  /** What the decoded request holds so far, shared by every Reader of the same body. */
  readonly budget: DecodeBudget;
  /** The event names of the log records whose attributes are kept (decodeLogsProto's keepAttributesOf); all when undefined. */
  readonly kept: ReadonlySet<string> | undefined;
  /**
   * The messages open within the attribute or body this Reader stopped in for a pause, innermost last (readNested
   * goes on with them); undefined while none is.
   */
  nested: Frame[] | undefined = undefined;

  constructor(buf: Buffer, pos: number, end: number, strings?: StringCache, budget: DecodeBudget = unbounded(), kept?: ReadonlySet<string>) {
    this.buf = buf;
    this.pos = pos;
    this.end = end;
    this.strings = strings;
    this.budget = budget;
    this.kept = kept;
  }

  /** A varint used as a tag or a length; values past 2^53 lose precision and then fail the bounds checks. */
  varint(): number {
    const buf = this.buf;
    let result = 0;
    let mul = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new DecodeError('truncated protobuf: varint runs past the end of its message');
      const byte = buf[this.pos++] as number;
      result += (byte & 0x7f) * mul;
      if ((byte & 0x80) === 0) return result;
      mul *= 128;
    }
    throw new DecodeError('malformed protobuf: varint longer than 10 bytes');
  }

  /** A field tag: field number and wire type. */
  tag(): number {
    const t = this.varint();
    if (t > 0xffffffff || t < 8) throw new DecodeError(`malformed protobuf: invalid field tag ${t}`);
    return t;
  }

  /** An int64 varint (two's complement); a number when it fits 2^53, else a bigint. */
  varint64(): number | bigint {
    // Up to 7 bytes (less than 2^49, so positive and exact as a number), the usual counts and sequence numbers,
    // read without BigInt; a longer or truncated one is read again below.
    const buf = this.buf;
    let pos = this.pos;
    let small = 0;
    let mul = 1;
    for (const last = Math.min(this.end, pos + 7); pos < last; mul *= 128) {
      const byte = buf[pos++] as number;
      small += (byte & 0x7f) * mul;
      if ((byte & 0x80) === 0) {
        this.pos = pos;
        return small;
      }
    }
    let result = 0n;
    let shift = 0n;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new DecodeError('truncated protobuf: varint runs past the end of its message');
      const byte = this.buf[this.pos++] as number;
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) {
        const signed = BigInt.asIntN(64, result);
        return signed >= BigInt(Number.MIN_SAFE_INTEGER) && signed <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(signed) : signed;
      }
      shift += 7n;
    }
    throw new DecodeError('malformed protobuf: varint longer than 10 bytes');
  }

  /**
   * Passes over an int64 varint without building its value (skipped fields, bools: most records carry a few);
   * returns whether its 64-bit value is non-zero, as `varint64() !== 0` would.
   */
  skipVarint(): boolean {
    let nonZero = 0;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new DecodeError('truncated protobuf: varint runs past the end of its message');
      const byte = this.buf[this.pos++] as number;
      // The tenth byte holds only bit 63; higher bits fall outside an int64.
      nonZero |= i < 9 ? byte & 0x7f : byte & 0x01;
      if ((byte & 0x80) === 0) return nonZero !== 0;
    }
    throw new DecodeError('malformed protobuf: varint longer than 10 bytes');
  }

  fixed64(): bigint {
    if (this.pos + 8 > this.end) throw new DecodeError('truncated protobuf: fixed64 runs past the end of its message');
    // DataView's getBigUint64 makes the one BigInt; Buffer's readBigUInt64LE builds it from four (two records' times
    // of every hook event: some 20 ns and 100 bytes of garbage each).
    const v = this.strings === undefined ? this.buf.readBigUInt64LE(this.pos) : this.strings.words.getBigUint64(this.pos, true);
    this.pos += 8;
    return v;
  }

  double(): number {
    if (this.pos + 8 > this.end) throw new DecodeError('truncated protobuf: double runs past the end of its message');
    const v = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }

  /** The end offset of a length-delimited field starting at pos. */
  lengthEnd(): number {
    const len = this.varint();
    const end = this.pos + len;
    if (end > this.end) {
      // A varint read as a number is exact below 2^53 only: one past it would be printed rounded.
      const declared = Number.isSafeInteger(len) ? String(len) : 'more than 2^53';
      throw new DecodeError(`truncated protobuf: a field declares ${declared} bytes but only ${this.end - this.pos} remain`);
    }
    return end;
  }

  string(): string {
    const end = this.lengthEnd();
    const start = this.pos;
    this.pos = end;
    return this.text(start, end);
  }

  /** The string whose UTF-8 bytes are buf[start, end), shared with an earlier equal one of the same body. */
  text(start: number, end: number): string {
    const cache = this.strings;
    const len = end - start;
    if (cache === undefined || len > STRING_CACHE_MAX_BYTES) return utf8(this.buf, start, end);
    const buf = this.buf;
    const words = cache.words;
    // FNV-1a over the bytes four at a time, then the last few one by one.
    let h = 0x811c9dc5 ^ len;
    let i = start;
    for (; i + 4 <= end; i += 4) h = Math.imul(h ^ words.getInt32(i, true), 0x01000193);
    for (; i < end; i++) h = Math.imul(h ^ (buf[i] as number), 0x01000193);
    const slot = (h ^ (h >>> 15)) & (STRING_SLOTS - 1);
    if (cache.lengths[slot] === len) {
      const other = cache.starts[slot] as number;
      let j = 0;
      while (j + 4 <= len && words.getInt32(other + j, true) === words.getInt32(start + j, true)) j += 4;
      if (j + 4 > len) {
        while (j < len && buf[other + j] === buf[start + j]) j++;
        if (j === len) return cache.values[slot] as string;
      }
    }
    const s = utf8(buf, start, end);
    cache.starts[slot] = start;
    cache.lengths[slot] = len;
    cache.values[slot] = s;
    return s;
  }

  bytes(): Uint8Array {
    const end = this.lengthEnd();
    const b = this.buf.subarray(this.pos, end);
    this.pos = end;
    return b;
  }

  skip(wireType: number): void {
    switch (wireType) {
      case 0:
        this.skipVarint();
        return;
      case 1:
        if (this.pos + 8 > this.end) throw new DecodeError('truncated protobuf: fixed64 runs past the end of its message');
        this.pos += 8;
        return;
      case 2:
        this.pos = this.lengthEnd();
        return;
      case 5:
        if (this.pos + 4 > this.end) throw new DecodeError('truncated protobuf: fixed32 runs past the end of its message');
        this.pos += 4;
        return;
      default:
        throw new DecodeError(`malformed protobuf: unsupported wire type ${wireType}`);
    }
  }
}

function isKvList(v: AnyValue): v is KvList {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Uint8Array);
}

function expectWire(wireType: number, want: number, what: string): void {
  if (wireType !== want) throw new DecodeError(`malformed protobuf: ${what} has wire type ${wireType}, expected ${want}`);
}

function sub(r: Reader, wireType: number, what: string): Reader {
  expectWire(wireType, 2, what);
  const end = r.lengthEnd();
  const child = new Reader(r.buf, r.pos, end, r.strings, r.budget, r.kept);
  r.pos = end;
  return child;
}

/**
 * Narrows `r` to the length-delimited field at its position and returns the enclosing end, for `leave`: the
 * nested messages of every attribute (KeyValue, AnyValue) are read in place, without a Reader each.
 */
function enter(r: Reader, wireType: number, what: string): number {
  expectWire(wireType, 2, what);
  const end = r.lengthEnd();
  const outer = r.end;
  r.end = end;
  return outer;
}

/** Back to the enclosing message once the nested one is read to its end. */
function leave(r: Reader, outer: number): void {
  r.end = outer;
}

/**
 * An AnyValue being read, over every occurrence of its field (protobuf merges them): what its message members
 * (array_value, kvlist_value) decoded to so far, or, while the last member read is a scalar one (string_value,
 * bool_value, int_value, double_value, bytes_value), that member's field number and where it starts. A scalar
 * member is decoded once the value is read through (valueOf), the last one only, as protobuf keeps the last: a
 * value repeating one a million times costs as much as a million fields skipped, not a million strings.
 */
class ValueRead {
  value: AnyValue;
  /** The field number of the last member read when it is a scalar one, else 0. */
  scalar = 0;
  /** Where that scalar member's value (for a string or bytes, its length) starts. */
  at = 0;
  constructor(value: AnyValue) {
    this.value = value;
  }
}

/**
 * The AnyValue that `r` is narrowed to (enter), merged into `read`: what earlier occurrences of the same field
 * read. Protobuf merges a message field that occurs more than once: a later member of the oneof replaces the
 * value, a later array_value or kvlist_value appends to the one before, and an empty AnyValue leaves it as it was.
 * Reads its scalar members up to its end (0) or up to an array_value or kvlist_value member, whose tag it returns
 * with r.pos after it: that member is read by readNested, in slices (openMember).
 */
function anyValueInto(r: Reader, depth: number, read: ValueRead): number {
  if (depth > MAX_ANYVALUE_DEPTH) throw new DecodeError(`AnyValue nested deeper than ${MAX_ANYVALUE_DEPTH} levels`);
  while (r.pos < r.end) {
    const tag = r.tag();
    const field = tag >>> 3;
    const wt = tag & 7;
    switch (field) {
      // A scalar member: checked as its decode would check it, and passed over.
      case 1: case 7:
        expectWire(wt, 2, field === 1 ? 'AnyValue.string_value' : 'AnyValue.bytes_value');
        read.scalar = field;
        read.at = r.pos;
        r.pos = r.lengthEnd();
        break;
      case 2: case 3:
        expectWire(wt, 0, field === 2 ? 'AnyValue.bool_value' : 'AnyValue.int_value');
        read.scalar = field;
        read.at = r.pos;
        r.skipVarint();
        break;
      case 4:
        expectWire(wt, 1, 'AnyValue.double_value');
        read.scalar = field;
        read.at = r.pos;
        r.skip(1);
        break;
      case 5: case 6:
        return tag;
      default: r.skip(wt);
    }
  }
  return 0;
}

/** What `read` holds once read through, its scalar member decoded from `r` (which still spans it). */
function valueOf(r: Reader, read: ValueRead): AnyValue {
  if (read.scalar === 0) return read.value;
  const pos = r.pos;
  r.pos = read.at;
  let value: AnyValue;
  switch (read.scalar) {
    case 1: value = r.string(); break;
    case 2: value = r.skipVarint(); break;
    case 3: value = r.varint64(); break;
    case 4: value = r.double(); break;
    default: value = r.bytes();
  }
  r.pos = pos;
  return value;
}

/** Frame kinds: an AnyValue, an ArrayValue, a KeyValueList, a KeyValue. */
const VALUE = 0;
const ARRAY = 1;
const KVLIST = 2;
const KEYVALUE = 3;

/**
 * A message open within one attribute or body, on the stack readNested reads from (Reader.nested): an AnyValue
 * (merged into `read`), its array_value (pushing to `values`) or kvlist_value (setting into `map`), or a KeyValue
 * (set into `map` once read through, its last key at `keyAt`, its values merged into `read`).
 */
interface Frame {
  kind: number;
  /** The nesting depth MAX_ANYVALUE_DEPTH bounds: an AnyValue's; a list's, its AnyValue's; a KeyValue's, its values'. */
  depth: number;
  /** Where it ends, and where the message it is in ends, which `r.end` is again once it is read (leave). */
  end: number;
  outer: number;
  read: ValueRead | undefined;
  values: AnyValue[] | undefined;
  map: Attributes | undefined;
  keyAt: number;
  /** A record's body (the bottom frame, an AnyValue): the record it is the body of. */
  rec: LogRecord | undefined;
}

/** A Frame of `kind` read up to `end` from within the message that ends at `outer`, its other members to be set. */
function frame(kind: number, depth: number, outer: number, end: number): Frame {
  return { kind, depth, end, outer, read: undefined, values: undefined, map: undefined, keyAt: -1, rec: undefined };
}

/**
 * Opens the array_value or kvlist_value member whose tag anyValueInto returned, of the AnyValue frame `f` on top of
 * `stack`: merged into what `f` read so far (a list after a list appends to it, else it replaces the value).
 */
function openMember(r: Reader, tag: number, f: Frame, stack: Frame[]): void {
  const read = f.read as ValueRead;
  if (tag >>> 3 === 5) {
    const outer = enter(r, tag & 7, 'AnyValue.array_value');
    const values: AnyValue[] = read.scalar === 0 && Array.isArray(read.value) ? read.value : [];
    read.scalar = 0;
    read.value = values;
    const list = frame(ARRAY, f.depth, outer, r.end);
    list.values = values;
    stack.push(list);
  } else {
    const outer = enter(r, tag & 7, 'AnyValue.kvlist_value');
    const before = read.scalar === 0 && isKvList(read.value) ? read.value : undefined;
    const map: Attributes = before?.kvlist ?? new Map();
    read.scalar = 0;
    read.value = before ?? { kvlist: map };
    const list = frame(KVLIST, f.depth, outer, r.end);
    list.map = map;
    stack.push(list);
  }
}

/**
 * Reads on the messages open in `r` (Reader.nested, innermost last) until the outermost is read through and set
 * where it goes (false), or until a pause is due (true: called again, it goes on where it stopped): after each
 * entry of an array_value or kvlist_value the budget charges, when it says a slice is done, or after
 * NESTED_SLICE_STEPS steps. An attribute or body of a million entries, or of lists nested to MAX_ANYVALUE_DEPTH,
 * is read in slices so; what it decodes to, what it charges and what it refuses are as read in one piece.
 */
function readNested(r: Reader): boolean {
  const stack = r.nested as Frame[];
  for (let steps = 0; ; steps++) {
    if (steps === NESTED_SLICE_STEPS || r.budget.pauseDue()) return true;
    const f = stack[stack.length - 1] as Frame;
    if (r.pos >= r.end) {
      stack.pop();
      closeFrame(r, f, stack);
      if (stack.length === 0) {
        r.nested = undefined;
        return false;
      }
      continue;
    }
    switch (f.kind) {
      case VALUE: {
        const tag = anyValueInto(r, f.depth, f.read as ValueRead);
        if (tag !== 0) openMember(r, tag, f, stack);
        break;
      }
      case ARRAY: {
        const t = r.tag();
        if (t >>> 3 === 1) {
          r.budget.charge(DECODED_BYTES.value, r.pos, r.buf.length);
          const outer = enter(r, t & 7, 'ArrayValue.values');
          // A value with no list in it is read here; one with a list goes on as a frame.
          const read = new ValueRead(null);
          const member = anyValueInto(r, f.depth + 1, read);
          if (member === 0) {
            (f.values as AnyValue[]).push(valueOf(r, read));
            leave(r, outer);
          } else {
            const value = frame(VALUE, f.depth + 1, outer, r.end);
            value.read = read;
            stack.push(value);
            openMember(r, member, value, stack);
          }
        } else r.skip(t & 7);
        break;
      }
      case KVLIST: {
        const t = r.tag();
        if (t >>> 3 === 1) {
          r.budget.charge(DECODED_BYTES.value, r.pos, r.buf.length);
          const outer = enter(r, t & 7, 'KeyValueList.values');
          const depth = f.depth + 1;
          const map = f.map as Attributes;
          // A KeyValue with no list in it is read here; one with a list goes on as frames.
          if (plainKeyValue(r, map, depth)) leave(r, outer);
          else keyValue(r, map, depth, outer, stack);
        } else r.skip(t & 7);
        break;
      }
      default: {
        // A KeyValue: the last key wins and every value merges into one, decoded once it is read through.
        const tag = r.tag();
        const field = tag >>> 3;
        if (field === 1) {
          expectWire(tag & 7, 2, 'KeyValue.key');
          f.keyAt = r.pos;
          r.pos = r.lengthEnd();
        } else if (field === 2) {
          const outer = enter(r, tag & 7, 'KeyValue.value');
          const value = frame(VALUE, f.depth, outer, r.end);
          value.read = f.read;
          stack.push(value);
        } else r.skip(tag & 7);
      }
    }
  }
}

/** A message of readNested's read through (`r` at its end, still narrowed to it), set where it goes; `stack` holds those it is in. */
function closeFrame(r: Reader, f: Frame, stack: Frame[]): void {
  if (f.kind === VALUE) {
    // A KeyValue's value is read once the KeyValue is (its `read`, which every value of it merges into).
    const into = stack[stack.length - 1];
    if (into === undefined) (f.rec as LogRecord).body = valueOf(r, f.read as ValueRead);
    else if (into.kind === ARRAY) (into.values as AnyValue[]).push(valueOf(r, f.read as ValueRead));
  } else if (f.kind === KEYVALUE) {
    let key = '';
    if (f.keyAt !== -1) {
      r.pos = f.keyAt;
      key = r.string();
      r.pos = r.end;
    }
    const map = f.map as Attributes;
    map.set(key, valueOf(r, f.read as ValueRead));
    if (map === UNKEPT) map.clear();
  }
  leave(r, f.outer);
}

/**
 * Where the key field that the KeyValue in buf[p, end) begins with ends, when its length is a single byte (the key
 * is buf[p + 2, v)), else -1: the start of the plain shapes below. May lie past `end`; they check that.
 */
function plainKeyEnd(buf: Buffer, p: number, end: number): number {
  if (buf[p] !== 0x0a || p + 1 >= end) return -1;
  const keyLen = buf[p + 1] as number;
  return keyLen < 0x80 ? p + 2 + keyLen : -1;
}

/**
 * Where the value field of the KeyValue in buf[p, end) begins when the KeyValue has the plain shape, else -1.
 * Nearly every attribute is a short key with a short string value, encoded as protobuf encoders write it: key
 * (field 1), then value (field 2) holding only string_value (field 1), each length a single byte. That exact shape
 * is read straight off the bytes (its key is buf[p + 2, v), its string buf[v + 4, end)) and cannot be malformed.
 */
function plainStringValue(buf: Buffer, p: number, end: number): number {
  const v = plainKeyEnd(buf, p, end);
  if (v === -1 || v + 4 > end || buf[v] !== 0x12 || buf[v + 2] !== 0x0a) return -1;
  const valueLen = buf[v + 1] as number;
  const strLen = buf[v + 3] as number;
  return valueLen < 0x80 && strLen < 0x80 && valueLen === strLen + 2 && v + 4 + strLen === end ? v : -1;
}

/**
 * Where the value field of the KeyValue in buf[p, end) begins when the KeyValue is a key and a value holding only a
 * bool_value or int_value (field 2 or 3, a varint of at most 10 bytes that ends the value), each length a single
 * byte, else -1: the shape of Claude Code's event.sequence and boolean attributes, read without the general path.
 */
function plainVarintValue(buf: Buffer, p: number, end: number): number {
  const v = plainKeyEnd(buf, p, end);
  if (v === -1 || v + 4 > end || buf[v] !== 0x12 || (buf[v + 2] !== 0x10 && buf[v + 2] !== 0x18)) return -1;
  const valueLen = buf[v + 1] as number;
  if (valueLen !== end - v - 2 || valueLen > 11) return -1;
  // The varint: every byte but the last with its continuation bit.
  for (let i = v + 3; i < end - 1; i++) if (((buf[i] as number) & 0x80) === 0) return -1;
  return ((buf[end - 1] as number) & 0x80) === 0 ? v : -1;
}

/**
 * The KeyValue that `r` is narrowed to (enter) when it has one of the plain shapes (plainStringValue,
 * plainVarintValue), set into `into`, read straight off the bytes: true, else false (r.pos where it was). A value
 * past the nesting limit takes the general path, to be refused there as JSON refuses it.
 */
function plainKeyValue(r: Reader, into: Attributes, depth: number): boolean {
  if (depth > MAX_ANYVALUE_DEPTH) return false;
  const p = r.pos;
  const end = r.end;
  const v = plainStringValue(r.buf, p, end);
  if (v !== -1) {
    const key = r.text(p + 2, v);
    into.set(key, r.text(v + 4, end));
    r.pos = end;
    return true;
  }
  const n = plainVarintValue(r.buf, p, end);
  if (n !== -1) {
    const key = r.text(p + 2, n);
    r.pos = n + 3;
    into.set(key, r.buf[n + 2] === 0x10 ? r.skipVarint() : r.varint64());
    return true;
  }
  return false;
}

/**
 * The KeyValue of nesting depth `depth` that `r` is narrowed to (enter, from `outer`), set into `into` and left
 * (leave): undefined. Or, when a value of it holds an array_value or kvlist_value, the KeyValue, that value and
 * the list go on as Frames, pushed onto `stack` (a new one if undefined), which is returned: readNested reads on.
 */
function keyValue(r: Reader, into: Attributes, depth: number, outer: number, stack: Frame[] | undefined): Frame[] | undefined {
  // The last key wins and every value merges into one (anyValueInto), each decoded once at the end.
  let keyAt = -1;
  const value = new ValueRead(null);
  while (r.pos < r.end) {
    const tag = r.tag();
    const field = tag >>> 3;
    if (field === 1) {
      expectWire(tag & 7, 2, 'KeyValue.key');
      keyAt = r.pos;
      r.pos = r.lengthEnd();
    } else if (field === 2) {
      const valueOuter = enter(r, tag & 7, 'KeyValue.value');
      const member = anyValueInto(r, depth, value);
      if (member !== 0) {
        const kv = frame(KEYVALUE, depth, outer, valueOuter);
        kv.map = into;
        kv.read = value;
        kv.keyAt = keyAt;
        const v = frame(VALUE, depth, valueOuter, r.end);
        v.read = value;
        const open = stack ?? [];
        open.push(kv, v);
        openMember(r, member, v, open);
        return open;
      }
      leave(r, valueOuter);
    } else {
      r.skip(tag & 7);
    }
  }
  let key = '';
  if (keyAt !== -1) {
    r.pos = keyAt;
    key = r.string();
    r.pos = r.end;
  }
  into.set(key, valueOf(r, value));
  if (into === UNKEPT) into.clear();
  leave(r, outer);
  return undefined;
}

/**
 * An attribute (keyValue, not a plain one) that `r` is narrowed to (from `outer`), set into `into`: false; or true
 * when a pause came due within a list of it, its rest open in r.nested (readNested sets and leaves it).
 */
function attributeRest(r: Reader, into: Attributes, outer: number): boolean {
  const open = keyValue(r, into, 0, outer, undefined);
  if (open === undefined) return false;
  r.nested = open;
  return readNested(r);
}

/** An attribute read into `into`: true when a pause came due within it, its rest in r.nested (attributeRest). */
function attributesInto(r: Reader, wt: number, into: Attributes, what: string): boolean {
  r.budget.charge(DECODED_BYTES.value, r.pos, r.buf.length);
  const outer = enter(r, wt, what);
  if (plainKeyValue(r, into, 0)) {
    leave(r, outer);
    return false;
  }
  return attributeRest(r, into, outer);
}

/** Where attributes read and checked but not kept go; emptied after each. */
const UNKEPT: Attributes = new Map();

/**
 * An attribute of a record whose attributes are not kept: read and checked as attributesInto reads it (the same
 * charge, the same refusals, the same pauses), its value left out. A plain one (plainStringValue,
 * plainVarintValue), which cannot be malformed, is passed over without decoding anything.
 */
function attributeChecked(r: Reader, wt: number, what: string): boolean {
  r.budget.charge(DECODED_BYTES.value, r.pos, r.buf.length);
  const outer = enter(r, wt, what);
  if (plainStringValue(r.buf, r.pos, r.end) !== -1 || plainVarintValue(r.buf, r.pos, r.end) !== -1) {
    r.pos = r.end;
    leave(r, outer);
    return false;
  }
  return attributeRest(r, UNKEPT, outer);
}

/**
 * The body (an AnyValue) of the record `r` is on, at its field of wire type `wt`, merged into rec.body: false once
 * read; true when a pause came due within a list of it, its rest in r.nested (readNested sets rec.body).
 */
function bodyInto(r: Reader, wt: number, rec: LogRecord): boolean {
  const outer = enter(r, wt, 'LogRecord.body');
  const read = new ValueRead(rec.body ?? null);
  const member = anyValueInto(r, 0, read);
  if (member !== 0) {
    const v = frame(VALUE, 0, outer, r.end);
    v.read = read;
    v.rec = rec;
    r.nested = [v];
    openMember(r, member, v, r.nested);
    return readNested(r);
  }
  rec.body = valueOf(r, read);
  leave(r, outer);
  return false;
}

/** The bytes of the attribute key event.name. */
const EVENT_NAME_KEY = Buffer.from('event.name');

/** Whether buf[start, end) are the bytes of `text`. */
function sameBytes(buf: Buffer, start: number, end: number, text: Buffer): boolean {
  if (end - start !== text.length) return false;
  for (let i = 0; i < text.length; i++) if (buf[start + i] !== text[i]) return false;
  return true;
}

/**
 * Where the last string_value of the AnyValue in [r.pos, end) starts (at its length), else `last`: protobuf keeps
 * the last, so no other can name the record (an array or kvlist inside it is no string, so is not looked into).
 * Leaves r.pos at end.
 */
function lastString(r: Reader, end: number, last: number): number {
  let at = last;
  while (r.pos < end) {
    const tag = r.tag();
    if (tag === 0x0a) {
      at = r.pos;
      const to = r.lengthEnd();
      if (to > end) throw new DecodeError('truncated protobuf');
      r.pos = to;
    } else r.skip(tag & 7);
  }
  return at;
}

/** Whether the string whose length is at `at` (lastString; -1: none) is one of `names`. Moves r.pos. */
function stringNamed(r: Reader, at: number, names: ReadonlySet<string>): boolean {
  if (at === -1) return false;
  r.pos = at;
  const to = r.lengthEnd();
  return names.has(r.text(r.pos, to));
}

/**
 * Fields of a log record mayBeNamed reads between two pauses: as many as a slice (DECODE_SLICE_BYTES) decodes
 * attributes, which takes longer each. A record of a million attributes is scanned in slices too. Likewise the
 * fields the budget charges nothing for (a record's time, event_name and body, a scope's name, unknown fields)
 * that the decode proper reads in a row: a message repeating one a million times is read in slices of them.
 */
const SCAN_SLICE_FIELDS = DECODE_SLICE_BYTES / DECODED_BYTES.value;

/**
 * Steps readNested takes between two pauses at most, each reading one field or closing one message: a list's
 * entry takes one (a value or KeyValue with no list in it) to a few, so the budget's slice (DECODE_SLICE_BYTES,
 * SCAN_SLICE_FIELDS entries) ends first for lists of any ordinary shape; what the budget charges nothing for (an
 * empty array_value repeated in one KeyValue of a list, unknown fields) is read in slices of as many steps.
 */
const NESTED_SLICE_STEPS = 8 * SCAN_SLICE_FIELDS;

/** mayBeNamed's answers, once it has read a record through (else it answers where to go on from). */
const NAMED = -1;
const UNNAMED = -2;

/**
 * Whether the log record `r` is on may be named one of `names`: by the last string of an event.name attribute, any
 * event_name, or the last string of any of its body fields (a superset of what any reader of the record matches:
 * the last event.name, else event_name, else the body; a string that a later one replaces names nothing, so a
 * value repeating a million strings costs one look-up). Read without building anything, from offset `from` of the record: NAMED or
 * UNNAMED, or, after SCAN_SLICE_FIELDS fields with more to read, the offset to go on from (called again with it
 * after a pause). A record this cannot read through (malformed, to be refused by the decode proper) counts as
 * named. Leaves `r` where it was.
 */
function mayBeNamed(r: Reader, names: ReadonlySet<string>, from: number): number {
  const start = r.pos;
  const end = r.end;
  r.pos = from;
  try {
    for (let fields = 0; r.pos < end; fields++) {
      if (fields === SCAN_SLICE_FIELDS) return r.pos;
      const tag = r.tag();
      const field = tag >>> 3;
      if ((tag & 7) !== 2 || (field !== 5 && field !== 6 && field !== 12)) {
        r.skip(tag & 7);
        continue;
      }
      const fieldEnd = r.lengthEnd();
      if (field === 12) {
        if (names.has(r.text(r.pos, fieldEnd))) return NAMED;
      } else if (field === 5) {
        if (stringNamed(r, lastString(r, fieldEnd, -1), names)) return NAMED;
      } else {
        const v = plainStringValue(r.buf, r.pos, fieldEnd);
        if (v !== -1) {
          if (sameBytes(r.buf, r.pos + 2, v, EVENT_NAME_KEY) && names.has(r.text(v + 4, fieldEnd))) return NAMED;
        } else if (keyValueNamed(r, fieldEnd, names)) return NAMED;
      }
      r.pos = fieldEnd;
    }
    return UNNAMED;
  } catch (err) {
    if (err instanceof DecodeError) return NAMED;
    throw err;
  } finally {
    r.pos = start;
  }
}

/** For mayBeNamed: whether the KeyValue in [r.pos, end), when any of its keys is event.name, has the last string of its values named. */
function keyValueNamed(r: Reader, end: number, names: ReadonlySet<string>): boolean {
  const from = r.pos;
  let isEventName = false;
  while (r.pos < end) {
    const tag = r.tag();
    if (tag === 0x0a) {
      const to = r.lengthEnd();
      if (to > end) throw new DecodeError('truncated protobuf');
      isEventName ||= sameBytes(r.buf, r.pos, to, EVENT_NAME_KEY);
      r.pos = to;
    } else r.skip(tag & 7);
  }
  if (!isEventName) return false;
  // Its values merge into one: the last string of them all is the only one that can be its value.
  r.pos = from;
  let at = -1;
  while (r.pos < end) {
    const tag = r.tag();
    if (tag === 0x12) {
      const to = r.lengthEnd();
      if (to > end) throw new DecodeError('truncated protobuf');
      at = lastString(r, to, at);
    } else r.skip(tag & 7);
  }
  return stringNamed(r, at, names);
}

/**
 * Reads the fields of the log record `r` is on into `rec`, to the record's end (false) or, when a slice is done
 * after one of its attributes or SCAN_SLICE_FIELDS of its other fields, to there (true: called again, it goes on
 * where it stopped). A record may hold a million attributes, or a million of any field. Unless `keep`, its
 * attributes are read and checked but left out of `rec`.
 */
function logRecordInto(r: Reader, rec: LogRecord, keep: boolean): boolean {
  if (r.nested !== undefined && (readNested(r) || r.budget.pauseDue())) return true;
  let uncharged = 0;
  while (r.pos < r.end) {
    const tag = r.tag();
    const field = tag >>> 3;
    const wt = tag & 7;
    switch (field) {
      case 1: expectWire(wt, 1, 'LogRecord.time_unix_nano'); rec.timeUnixNano = r.fixed64(); break;
      case 11: expectWire(wt, 1, 'LogRecord.observed_time_unix_nano'); rec.observedTimeUnixNano = r.fixed64(); break;
      case 5: if (bodyInto(r, wt, rec)) return true; break;
      case 6:
        if (keep ? attributesInto(r, wt, rec.attributes, 'LogRecord.attributes') : attributeChecked(r, wt, 'LogRecord.attributes')) return true;
        if (r.budget.pauseDue()) return true;
        continue;
      case 12: expectWire(wt, 2, 'LogRecord.event_name'); rec.eventName = r.string(); break;
      default: r.skip(wt);
    }
    if (++uncharged === SCAN_SLICE_FIELDS && r.pos < r.end) return true;
  }
  return false;
}

/**
 * Reads the fields of the InstrumentationScope `s` is on into `out`, to its end (false) or, as logRecordInto,
 * until a slice is done (true: called again, it goes on where it stopped).
 */
function scopeInto(s: Reader, out: ScopeLogs): boolean {
  if (s.nested !== undefined && (readNested(s) || s.budget.pauseDue())) return true;
  let uncharged = 0;
  while (s.pos < s.end) {
    const t = s.tag();
    const field = t >>> 3;
    if (field === 3) {
      // Not kept, but read: the body may be forwarded as it is, and a backend refuses a malformed one.
      if (attributesInto(s, t & 7, new Map(), 'InstrumentationScope.attributes') || s.budget.pauseDue()) return true;
      continue;
    }
    if (field === 1) { expectWire(t & 7, 2, 'InstrumentationScope.name'); out.scope.name = s.string(); }
    else if (field === 2) { expectWire(t & 7, 2, 'InstrumentationScope.version'); out.scope.version = s.string(); }
    else s.skip(t & 7);
    if (++uncharged === SCAN_SLICE_FIELDS && s.pos < s.end) return true;
  }
  return false;
}

/** Reads the attributes of the Resource `res` is on into `into`, to its end (false) or, as logRecordInto, until a slice is done (true). */
function resourceInto(res: Reader, into: Attributes): boolean {
  if (res.nested !== undefined && (readNested(res) || res.budget.pauseDue())) return true;
  let uncharged = 0;
  while (res.pos < res.end) {
    const t = res.tag();
    if (t >>> 3 === 1) {
      if (attributesInto(res, t & 7, into, 'Resource.attributes') || res.budget.pauseDue()) return true;
      continue;
    }
    res.skip(t & 7);
    if (++uncharged === SCAN_SLICE_FIELDS && res.pos < res.end) return true;
  }
  return false;
}

/**
 * A log record read in part: its reader, where it stopped, what it holds so far, and whether its attributes are
 * kept; or, while the scan for its names (mayBeNamed) is not done, where that goes on from (-1 once it is).
 */
interface OpenRecord {
  reader: Reader;
  rec: LogRecord;
  keep: boolean;
  scanAt: number;
}

/** A ScopeLogs' scope read in part (scopeInto): its reader, where it stopped. */
interface OpenScope {
  scope: Reader;
}

/**
 * Reads the fields of the ScopeLogs `r` is on into `out`, to its end (undefined) or until a slice is done, in its
 * scope, a record or the scan for its names (returned, to be finished first) or after one, or after
 * SCAN_SLICE_FIELDS of its other fields (`r` itself, where it stopped). The loop over records is a plain
 * function's, not the generator's: the optimizing compiler does not take over a generator's long loop.
 */
function scopeLogsInto(r: Reader, out: ScopeLogs): OpenRecord | OpenScope | Reader | undefined {
  let uncharged = 0;
  while (r.pos < r.end) {
    const tag = r.tag();
    const field = tag >>> 3;
    const wt = tag & 7;
    if (field === 1) {
      const scope = sub(r, wt, 'ScopeLogs.scope');
      if (scopeInto(scope, out)) return { scope };
    } else if (field === 2) {
      r.budget.charge(DECODED_BYTES.record, r.pos, r.buf.length);
      const rec: LogRecord = { timeUnixNano: 0n, observedTimeUnixNano: 0n, eventName: '', body: undefined, attributes: new Map() };
      out.logRecords.push(rec);
      const reader = sub(r, wt, 'ScopeLogs.log_records');
      let keep = true;
      if (r.kept !== undefined) {
        const named = mayBeNamed(reader, r.kept, reader.pos);
        if (named >= 0) return { reader, rec, keep: false, scanAt: named };
        keep = named === NAMED;
      }
      if (logRecordInto(reader, rec, keep)) return { reader, rec, keep, scanAt: -1 };
      if (r.budget.pauseDue()) return r;
      continue;
    } else {
      r.skip(wt);
    }
    if (++uncharged === SCAN_SLICE_FIELDS && r.pos < r.end) return r;
  }
  return undefined;
}

/** A ScopeLogs, a step ending wherever scopeLogsInto stops for a slice. */
function* scopeLogs(r: Reader): Generator<void, ScopeLogs, void> {
  const out: ScopeLogs = { scope: { name: '', version: '' }, logRecords: [] };
  for (let open = scopeLogsInto(r, out); open !== undefined; open = scopeLogsInto(r, out)) {
    yield;
    if (open instanceof Reader) continue;
    if ('scope' in open) {
      while (scopeInto(open.scope, out)) yield;
      continue;
    }
    while (open.scanAt !== -1) {
      const named = mayBeNamed(open.reader, open.reader.kept as ReadonlySet<string>, open.scanAt);
      if (named >= 0) {
        open.scanAt = named;
        yield;
      } else {
        open.scanAt = -1;
        open.keep = named === NAMED;
      }
    }
    while (logRecordInto(open.reader, open.rec, open.keep)) yield;
    if (r.budget.pauseDue()) yield;
  }
  return out;
}

/** A ResourceLogs, a step ending after each slice of its resource's attributes, its scopes' steps, or SCAN_SLICE_FIELDS of its other fields. */
function* resourceLogs(r: Reader): Generator<void, ResourceLogs, void> {
  const out: ResourceLogs = { resource: new Map(), scopeLogs: [] };
  let uncharged = 0;
  while (r.pos < r.end) {
    const tag = r.tag();
    const field = tag >>> 3;
    const wt = tag & 7;
    if (field === 2) {
      r.budget.charge(DECODED_BYTES.record, r.pos, r.buf.length);
      out.scopeLogs.push(yield* scopeLogs(sub(r, wt, 'ResourceLogs.scope_logs')));
      continue;
    }
    if (field === 1) {
      const res = sub(r, wt, 'ResourceLogs.resource');
      while (resourceInto(res, out.resource)) yield;
    } else r.skip(wt);
    if (++uncharged % SCAN_SLICE_FIELDS === 0) yield;
  }
  return out;
}

/**
 * Decodes an ExportLogsServiceRequest. Throws DecodeError naming the problem on malformed input, and
 * DecodeLimitError when what it decodes to would hold more memory than `budget` allows. With `keepAttributesOf`,
 * only the log records that may be named one of those event names (LogsConsumer.eventNames) keep their
 * attributes; every record is still read, checked and charged to `budget` whole, and refused alike.
 */
export function decodeLogsProto(body: Uint8Array, budget: DecodeBudget = unbounded(), keepAttributesOf?: ReadonlySet<string>): LogsRequest {
  return runToEnd(decodeLogsProtoSteps(body, budget, keepAttributesOf));
}

/**
 * decodeLogsProto in slices. A step ends once what it decoded reaches a slice (DecodeBudget.pauseDue), checked
 * after each log record and each attribute of a record, resource or scope, so a record of a million attributes
 * is decoded in slices too, and after each value of an array_value or kvlist_value within one attribute or body
 * (readNested), so one of a million entries, or lists nested to MAX_ANYVALUE_DEPTH, is too; or after
 * SCAN_SLICE_FIELDS fields the budget charges nothing for (mayBeNamed's scan of one record for the kept event
 * names, or a message's other fields in a row; NESTED_SLICE_STEPS within a list). A scalar member or key repeated
 * in one AnyValue or KeyValue is passed over, only its last occurrence decoded (anyValueInto).
 */
export function* decodeLogsProtoSteps(body: Uint8Array, budget: DecodeBudget = unbounded(), keepAttributesOf?: ReadonlySet<string>): Generator<void, LogsRequest, void> {
  const buf = Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const r = new Reader(buf, 0, buf.length, new StringCache(buf), budget, keepAttributesOf);
  const req: LogsRequest = { resourceLogs: [] };
  let uncharged = 0;
  while (r.pos < r.end) {
    const tag = r.tag();
    if (tag >>> 3 === 1) {
      r.budget.charge(DECODED_BYTES.record, r.pos, r.buf.length);
      req.resourceLogs.push(yield* resourceLogs(sub(r, tag & 7, 'ExportLogsServiceRequest.resource_logs')));
    } else {
      r.skip(tag & 7);
      if (++uncharged % SCAN_SLICE_FIELDS === 0) yield;
    }
  }
  return req;
}
