/**
 * Dead letters are kept whole and can be replayed: every dead letter keeps its body (well past the 1,000 that
 * used to be kept) under its own byte bound, where the oldest are evicted and counted; and
 * POST /api/v1/forwarding/dead-letters/replay (behind the API's authentication) puts them back in the queue,
 * after which every acknowledged request arrives downstream.
 */
import { afterEach, expect, it } from 'vitest';
import type { ForwardingResponse, ReplayResponse } from '../../../shared/src/api.ts';
import { sendSpans, spanNames, startForwardRig, until, type ForwardRig } from './forward-support.ts';

let rig: ForwardRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

const TOKEN = 'api-token-7c1e9b';
const auth = { authorization: `Bearer ${TOKEN}` };

async function status(httpUrl: string): Promise<ForwardingResponse> {
  return (await fetch(`${httpUrl}/api/v1/forwarding`, { headers: auth })).json() as Promise<ForwardingResponse>;
}

it('keeps all 1,200 dead letters with their bodies and replays them through the authenticated API', { timeout: 90_000 }, async () => {
  rig = await startForwardRig({ HOOKWATCH_FORWARD_RETRY_MAX_ELAPSED_TIME: '200ms', HOOKWATCH_HTTP_AUTH_MODE: 'bearer', HOOKWATCH_HTTP_AUTH_TOKEN: TOKEN });
  const { hw, downstream } = rig;
  // An expired key that nobody rotates in time: everything ends up a dead letter.
  downstream.mode = { kind: 'status', status: 401 };
  const acked = await sendSpans(hw.otlpHttpUrl, Array.from({ length: 1200 }, (_, i) => `span-${i}`));
  expect(acked).toHaveLength(1200);
  await until('every request dead-lettered', async () => (await status(hw.httpUrl)).destinations[0]!.deadLetters === 1200, 60_000);
  const before = await status(hw.httpUrl);
  expect(before.deadLetterSummary).toMatchObject({ count: 1200, evicted: 0 });
  expect(before.deadLetterSummary!.bytes).toBeGreaterThan(1200 * 50);
  expect(before.deadLetterSummary!.oldestFailedAt).not.toBeNull();
  expect(before.deadLetterSummary!.lastReason).toMatch(/answered 401/);

  // The replay route is an API write: it needs the API's credentials.
  const anonymous = await fetch(`${hw.httpUrl}/api/v1/forwarding/dead-letters/replay`, { method: 'POST' });
  expect(anonymous.status).toBe(401);
  expect((await status(hw.httpUrl)).deadLetterSummary!.count).toBe(1200);

  downstream.mode = { kind: 'accept' };
  const replay = await fetch(`${hw.httpUrl}/api/v1/forwarding/dead-letters/replay`, { method: 'POST', headers: auth });
  expect(replay.status).toBe(200);
  expect((await replay.json()) as ReplayResponse).toEqual({ replayed: 1200, remaining: 0 });
  await until('the replayed requests downstream', () => hw.forwarding!.queue.depth === 0, 60_000);
  const arrived = new Set(downstream.bodies('traces').flatMap(spanNames));
  expect(acked.filter((n) => !arrived.has(n))).toEqual([]);
  const after = await status(hw.httpUrl);
  expect(after.deadLetterSummary).toMatchObject({ count: 0, bytes: 0, replayed: 1200, oldestFailedAt: null });
});

it('bounds the dead letters by bytes, evicting and counting the oldest', async () => {
  rig = await startForwardRig({ HOOKWATCH_FORWARD_DEAD_LETTERS_MAX_BYTES: '2048' });
  const { hw, downstream } = rig;
  downstream.mode = { kind: 'status', status: 400 };
  const acked = await sendSpans(hw.otlpHttpUrl, Array.from({ length: 40 }, (_, i) => `refused-${i}`));
  expect(acked).toHaveLength(40);
  await until('every request refused', async () => (await status(hw.httpUrl)).destinations[0]!.deadLetters === 40);
  const s = (await status(hw.httpUrl)).deadLetterSummary!;
  expect(s.bytes).toBeLessThanOrEqual(2048);
  expect(s.count).toBeGreaterThan(0);
  expect(s.count + s.evicted).toBe(40);
  // The newest are the ones kept.
  downstream.mode = { kind: 'accept' };
  const replay = (await (await fetch(`${hw.httpUrl}/api/v1/forwarding/dead-letters/replay`, { method: 'POST' })).json()) as ReplayResponse;
  expect(replay.replayed).toBe(s.count);
  await until('the replayed requests downstream', () => hw.forwarding!.queue.depth === 0);
  const arrived = downstream.bodies('traces').flatMap(spanNames);
  expect(arrived).toContain(acked.at(-1));
  expect(arrived).toHaveLength(s.count);
});
