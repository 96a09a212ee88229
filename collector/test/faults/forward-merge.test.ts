/**
 * A hostile client cannot make acknowledged requests vanish downstream. Queued protobuf requests travel merged
 * by concatenation; a request ending in an unterminated group tag (field 99, wire type 3), followed later by one
 * carrying the closing tag, would make a downstream parser skip every request merged between them as one
 * unknown group. hookwatch skims every metrics and traces body before it acknowledges it, refuses malformed ones
 * with 400 / INVALID_ARGUMENT, and merges only well-formed requests.
 */
import { Client, Metadata, credentials, status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import { afterEach, expect, it } from 'vitest';
import { forwardingStatus, sendSpans, spanNames, startForwardRig, until, type ForwardRig } from './forward-support.ts';

let rig: ForwardRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

/** Field 99 with wire type 3 (start group) and 4 (end group), as varints. */
const START_GROUP_99 = Buffer.from([0x9b, 0x06]);
const END_GROUP_99 = Buffer.from([0x9c, 0x06]);

function grpcExport(url: string, path: string, body: Buffer): Promise<ServiceError | null> {
  const client = new Client(url.replace('http://', ''), credentials.createInsecure());
  const id = (b: Buffer): Buffer => b;
  return new Promise((resolve) => {
    client.makeUnaryRequest(path, id, id, body, new Metadata(), { deadline: Date.now() + 10_000 }, (err: ServiceError | null) => {
      client.close();
      resolve(err);
    });
  });
}

it('refuses an unterminated group and its closing tag, and every acknowledged request arrives downstream', async () => {
  rig = await startForwardRig();
  const { hw, downstream } = rig;
  // Down while the requests arrive, so they queue up and travel merged once it recovers.
  downstream.mode = { kind: 'status', status: 503, retryAfter: '0' };

  // Honest spans from the real exporter, one request each.
  const acked: string[] = [];
  const send = async (name: string): Promise<void> => {
    acked.push(...(await sendSpans(hw.otlpHttpUrl, [name], { concurrency: 1 })));
  };

  await send('honest-before');
  // The attack: a valid request (one empty ResourceSpans) with an unterminated group tag appended ...
  const opener = await fetch(`${hw.otlpHttpUrl}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/x-protobuf' }, body: new Uint8Array(Buffer.concat([Buffer.from([0x0a, 0x00]), START_GROUP_99])) });
  const openerText = await opener.text();
  // ... honest requests in between ...
  for (let i = 0; i < 30; i++) await send(`honest-${i}`);
  // ... and the closing tag, over gRPC this time.
  const closer = await grpcExport(hw.otlpGrpcUrl, '/opentelemetry.proto.collector.trace.v1.TraceService/Export', END_GROUP_99);
  await send('honest-after');
  expect(acked).toHaveLength(32);

  downstream.mode = { kind: 'accept' };
  await until('the queue drains', () => hw.forwarding!.queue.depth === 0);
  const arrived = new Set(downstream.bodies('traces').flatMap(spanNames));
  expect(acked.filter((n) => !arrived.has(n))).toEqual([]);
  // Merged: the honest requests travelled together, not one by one.
  expect(downstream.requests.length).toBeLessThan(acked.length);

  expect(opener.status).toBe(400);
  expect(openerText).toMatch(/field 99 .*wire type 3 \(start group\)/);
  expect(closer?.code).toBe(GrpcStatus.INVALID_ARGUMENT);
  expect(closer?.details).toMatch(/field 99 .*wire type 4 \(end group\)/);
  const s = await forwardingStatus(hw.httpUrl);
  expect(s.destinations[0]).toMatchObject({ deadLetters: 0, depth: 0 });
});

it('refuses truncated and over-nested protobuf and unparsable JSON metrics with 400 naming the problem', async () => {
  rig = await startForwardRig();
  const { hw } = rig;
  const post = async (body: Buffer | string, contentType = 'application/x-protobuf'): Promise<{ status: number; text: string }> => {
    const res = await fetch(`${hw.otlpHttpUrl}/v1/metrics`, { method: 'POST', headers: { 'content-type': contentType }, body: typeof body === 'string' ? body : new Uint8Array(body) });
    return { status: res.status, text: await res.text() };
  };
  // resource_metrics (field 1) declares 10 bytes, 2 follow.
  const truncated = await post(Buffer.from([0x0a, 0x0a, 0x01, 0x02]));
  expect(truncated.status).toBe(400);
  expect(truncated.text).toMatch(/truncated.*declares 10 bytes/);
  // A metric attribute whose AnyValue nests kvlists past the depth bound.
  let any = Buffer.from([0x0a, 0x00]);
  for (let i = 0; i < 200; i++) {
    const kv = Buffer.concat([Buffer.from([0x12]), varint(any.length), any]);
    const list = Buffer.concat([Buffer.from([0x0a]), varint(kv.length), kv]);
    any = Buffer.concat([Buffer.from([0x32]), varint(list.length), list]);
  }
  const kv = Buffer.concat([Buffer.from([0x12]), varint(any.length), any]);
  const resource = Buffer.concat([Buffer.from([0x0a]), varint(kv.length), kv]);
  const rm = Buffer.concat([Buffer.from([0x0a]), varint(resource.length), resource]);
  const deep = await post(Buffer.concat([Buffer.from([0x0a]), varint(rm.length), rm]));
  expect(deep.status).toBe(400);
  expect(deep.text).toMatch(/nested deeper than/);
  const json = await post('{"resourceMetrics": [', 'application/json');
  expect(json.status).toBe(400);
  expect(json.text).toMatch(/malformed JSON metrics request/);
  expect(hw.forwarding!.queue.depth + hw.forwarding!.status().delivered).toBe(0);
});

function varint(n: number): Buffer {
  const out: number[] = [];
  while (n > 127) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return Buffer.from(out);
}
