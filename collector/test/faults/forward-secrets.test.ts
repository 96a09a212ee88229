/**
 * A destination's refusal may repeat what it was sent: an API gateway answering 403 "invalid key <key> for
 * <url>". hookwatch shows that answer in GET /api/v1/forwarding (and so on the dashboard) and keeps it with each
 * dead letter, where anyone reaching the HTTP port reads it: the key in forward.headers, the password and query
 * key of forward.endpoint must not be in it, while the rest of the answer still says what went wrong.
 */
import { status as GrpcStatus } from '@grpc/grpc-js';
import { afterEach, expect, it } from 'vitest';
import { GrpcDownstream } from '../support/downstream-recorder.ts';
import { emitExecutions } from '../support/service.ts';
import { startTestService } from '../helpers.ts';
import { forwardingStatus, sendSpans, startForwardRig, until } from './forward-support.ts';

const HEADER_KEY = 'hdr-key-5f1c9a0e7b';
const QUERY_KEY = 'query-key-3d8e6b2a41';
const PASSWORD = 'url-pass-9c4f7e1d';
const TOKEN = 'bearer-token-7a2e5c9f04';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

it('over OTLP/HTTP, a 403 that repeats the key, the URL and the password: the API shows the refusal without them', async () => {
  const rig = await startForwardRig({
    HOOKWATCH_FORWARD_PROTOCOL: 'http/json',
    HOOKWATCH_FORWARD_HEADERS: `x-api-key=${HEADER_KEY}`,
    HOOKWATCH_FORWARD_RETRY_MAX_ELAPSED_TIME: '300ms',
  }, { endpoint: (url) => url.replace('http://', `http://hw:${PASSWORD}@`) + `/otlp?api_key=${QUERY_KEY}` });
  cleanups.push(() => rig.close());
  const { hw, downstream } = rig;
  downstream.mode = { kind: 'echo', status: 403 };

  const sent = await emitExecutions(hw.otlpHttpUrl, [{ hookEvent: 'SessionStart', hookName: 'memory' }], {}, { protocol: 'http/json' });
  expect(sent.codes).toEqual([0]);
  await until('a dead letter', async () => (await forwardingStatus(hw.httpUrl)).deadLetters.length === 1);
  // Sent with all three: the destination's answer held each of them.
  expect(downstream.refused).toBeGreaterThan(0);

  const text = await (await fetch(`${hw.httpUrl}/api/v1/forwarding`)).text();
  for (const secret of [HEADER_KEY, QUERY_KEY, PASSWORD, Buffer.from(`hw:${PASSWORD}`).toString('base64')]) expect(text).not.toContain(secret);
  const status = await forwardingStatus(hw.httpUrl);
  expect(status.destinations[0]!.lastError).toMatch(/answered 403: .*refused \/otlp\/v1\/logs/);
  expect(status.deadLetters[0]!.reason).toMatch(/answered 403: .*credential <redacted> not accepted: .*<redacted>/);
});

it('over OTLP/gRPC, a PERMISSION_DENIED whose details repeat the metadata: the API shows it without the key', async () => {
  const downstream = new GrpcDownstream();
  const url = await downstream.start();
  cleanups.push(() => downstream.stop());
  downstream.mode = { kind: 'echo', status: GrpcStatus.PERMISSION_DENIED };
  const hw = await startTestService({
    HOOKWATCH_FORWARD_ENDPOINT: url,
    HOOKWATCH_FORWARD_PROTOCOL: 'grpc',
    HOOKWATCH_FORWARD_HEADERS: `x-api-key=${HEADER_KEY},authorization=Bearer ${TOKEN}`,
    HOOKWATCH_FORWARD_RETRY_INITIAL_INTERVAL: '10ms',
    HOOKWATCH_FORWARD_RETRY_MAX_INTERVAL: '50ms',
  });
  cleanups.push(() => hw.close());

  expect(await sendSpans(hw.otlpHttpUrl, ['refused'])).toEqual(['refused']);
  await until('a refusal', async () => (await forwardingStatus(hw.httpUrl)).destinations[0]!.lastError !== null);

  const text = await (await fetch(`${hw.httpUrl}/api/v1/forwarding`)).text();
  // The token of a Bearer header too, where the answer repeats it alone.
  for (const secret of [HEADER_KEY, TOKEN]) expect(text).not.toContain(secret);
  expect((await forwardingStatus(hw.httpUrl)).destinations[0]!.lastError).toMatch(/answered PERMISSION_DENIED: credential <redacted> not accepted: refused with .*"x-api-key":"<redacted>"/);
});
