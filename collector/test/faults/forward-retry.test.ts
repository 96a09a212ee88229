/**
 * A downstream that answers 500, then 401, then 404 for a while (a deploy, an expired key, a load balancer
 * without its backends) and then recovers loses nothing: those refusals are retried with backoff for
 * forward.retry.maxElapsedTime (default one day), so every one of 1,100 acknowledged requests arrives and none is
 * dead-lettered. A 400 is still a dead letter at once.
 */
import { afterEach, expect, it } from 'vitest';
import { forwardingStatus, sendSpans, spanNames, startForwardRig, until, type ForwardRig } from './forward-support.ts';

let rig: ForwardRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

const names = (prefix: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);

it('retries 500, 401 and 404 until the downstream recovers: all 1,100 acknowledged requests arrive, none dead-lettered', { timeout: 90_000 }, async () => {
  rig = await startForwardRig();
  const { hw, downstream } = rig;
  const acked: string[] = [];

  downstream.mode = { kind: 'status', status: 500 };
  acked.push(...(await sendSpans(hw.otlpHttpUrl, names('during-500', 400))));
  await until('500s downstream', () => downstream.refused >= 5);
  downstream.mode = { kind: 'status', status: 401 };
  let refused = downstream.refused;
  acked.push(...(await sendSpans(hw.otlpHttpUrl, names('during-401', 350))));
  await until('401s downstream', () => downstream.refused >= refused + 5);
  downstream.mode = { kind: 'status', status: 404, retryAfter: '0' };
  refused = downstream.refused;
  acked.push(...(await sendSpans(hw.otlpHttpUrl, names('during-404', 350))));
  await until('404s downstream', () => downstream.refused >= refused + 5);
  // The outage lasts a while after the last request, as a deploy or a key rotation does.
  await new Promise((r) => setTimeout(r, 2000));
  expect(acked).toHaveLength(1100);
  expect(downstream.requests).toHaveLength(0);

  downstream.mode = { kind: 'accept' };
  await until('the queue drains', () => hw.forwarding!.queue.depth === 0, 60_000);
  const status = (await forwardingStatus(hw.httpUrl)).destinations[0]!;
  expect(status.deadLetters).toBe(0);
  const arrived = new Set(downstream.bodies('traces').flatMap(spanNames));
  expect(acked.filter((n) => !arrived.has(n))).toEqual([]);
  expect(status).toMatchObject({ consecutiveFailures: 0, lastError: null });
});

it('still dead-letters a 400 at once, and gives up on a 401 after forward.retry.maxElapsedTime', async () => {
  rig = await startForwardRig({ HOOKWATCH_FORWARD_RETRY_MAX_ELAPSED_TIME: '300ms' });
  const { hw, downstream } = rig;
  downstream.mode = { kind: 'status', status: 400 };
  expect(await sendSpans(hw.otlpHttpUrl, ['bad-request'])).toEqual(['bad-request']);
  await until('a dead letter', async () => (await forwardingStatus(hw.httpUrl)).destinations[0]!.deadLetters === 1);
  expect(downstream.refused).toBe(1);

  downstream.mode = { kind: 'status', status: 401 };
  expect(await sendSpans(hw.otlpHttpUrl, ['expired-key'])).toEqual(['expired-key']);
  await until('a second dead letter', async () => (await forwardingStatus(hw.httpUrl)).destinations[0]!.deadLetters === 2);
  // Retried (more than one refusal) before it gave up.
  expect(downstream.refused).toBeGreaterThan(2);
  const s = await forwardingStatus(hw.httpUrl);
  expect(s.deadLetters.map((d) => d.status)).toEqual([401, 400]);
  expect(s.deadLetters[0]!.reason).toMatch(/answered 401: \{"code":14,"message":"downstream refuses"\} \(retried for \d+ s, forward\.retry\.maxElapsedTime\)/);
});

it('a request refused with 500 every time becomes the only dead letter: the requests merged with it arrive', async () => {
  rig = await startForwardRig({ HOOKWATCH_FORWARD_RETRY_MAX_ELAPSED_TIME: '1s' });
  const { hw, downstream } = rig;
  // Down while they arrive, so they queue and travel merged once it is back.
  downstream.mode = { kind: 'status', status: 503, retryAfter: '0' };
  const names = ['good-0', 'good-1', 'POISON-2', 'good-3', 'good-4', 'good-5'];
  const acked: string[] = [];
  for (const name of names) acked.push(...(await sendSpans(hw.otlpHttpUrl, [name], { concurrency: 1 })));
  expect(acked).toEqual(names);
  // Back, but it refuses the one request with 500 each time (a body it cannot take), whatever it is merged with.
  downstream.mode = { kind: 'poison', marker: 'POISON', status: 500 };
  await until('the queue drains', () => hw.forwarding!.queue.depth === 0);
  const arrived = new Set(downstream.bodies('traces').flatMap(spanNames));
  expect(names.filter((n) => !arrived.has(n))).toEqual(['POISON-2']);
  const s = await forwardingStatus(hw.httpUrl);
  expect(s.destinations[0]!.deadLetters).toBe(1);
  expect(s.deadLetters.map((d) => d.status)).toEqual([500]);
});

it('counts the records a destination rejects in a partial success, and says why, without retrying', async () => {
  rig = await startForwardRig();
  const { hw, downstream } = rig;
  downstream.mode = { kind: 'partial', rejected: 3, message: 'backend dropped 3 records: quota' };
  expect(await sendSpans(hw.otlpHttpUrl, ['kept-1'], { concurrency: 1 })).toEqual(['kept-1']);
  expect(await sendSpans(hw.otlpHttpUrl, ['kept-2'], { concurrency: 1 })).toEqual(['kept-2']);
  await until('both delivered', () => hw.forwarding!.queue.depth === 0 && downstream.bodies('traces').length >= 2);
  const s = (await forwardingStatus(hw.httpUrl)).destinations[0]!;
  expect(s).toMatchObject({ delivered: 2, rejectedByDestination: 6, deadLetters: 0, consecutiveFailures: 0 });
  expect(downstream.bodies('traces')).toHaveLength(2);
  const metrics = await (await fetch(`${hw.httpUrl}/metrics`)).text();
  expect(metrics).toMatch(/^hookwatch_forward_rejected_records_total 6$/m);
});

it('honours Retry-After on a 500 as on a 503', async () => {
  rig = await startForwardRig();
  const { hw, downstream } = rig;
  downstream.mode = { kind: 'status', status: 500, retryAfter: '30' };
  expect(await sendSpans(hw.otlpHttpUrl, ['later'])).toEqual(['later']);
  await until('a refusal', async () => (await forwardingStatus(hw.httpUrl)).destinations[0]!.nextAttemptAt !== null);
  const s = (await forwardingStatus(hw.httpUrl)).destinations[0]!;
  // The retry schedule alone would wait at most 50 ms here: only the header explains half a minute.
  expect(Date.parse(s.nextAttemptAt!) - Date.now()).toBeGreaterThan(20_000);
  expect(s).toMatchObject({ state: 'backing_off', deadLetters: 0, depth: 1 });
  expect(downstream.refused).toBe(1);
});
