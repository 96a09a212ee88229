/** The few protobuf writing primitives hookwatch needs (responses, gRPC status details, enrichment). */

/** A base-128 varint of a non-negative integer up to 2^53. */
export function varint(n: number): number[] {
  const out: number[] = [];
  let v = n;
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
  return out;
}

/** A length-delimited field (wire type 2). */
export function lengthDelimited(field: number, payload: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from([...varint((field << 3) | 2), ...varint(payload.length)]), payload]);
}

/** A varint field (wire type 0). */
export function varintField(field: number, value: number): Buffer {
  return Buffer.from([...varint(field << 3), ...varint(value)]);
}
