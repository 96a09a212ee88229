/**
 * The inline-mode promise, with the real `hookwatch` process: the downstream answers 503 for a while, then drops
 * connections, hookwatch is killed with SIGKILL in the middle of the outage and started again, then the
 * downstream recovers. Every request hookwatch acknowledged with a 200 must arrive downstream at least once.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import type { ForwardingResponse } from '../../../shared/src/api.ts';
import { HttpDownstream } from '../../test/support/downstream-recorder.ts';
import { waitForStarted } from '../../test/support/started.ts';

const MAIN = fileURLToPath(new URL('../main.ts', import.meta.url));

const children: ChildProcess[] = [];
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Running {
  child: ChildProcess;
  otlpHttp: string;
  http: string;
}

/** Starts `node collector/src/main.ts` and resolves with its URLs from the "hookwatch started" log line. */
function startHookwatch(env: Record<string, string>): Promise<Running> {
  const child = spawn(process.execPath, [MAIN], { env: { PATH: process.env['PATH'] ?? '', ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  children.push(child);
  return waitForStarted(child, 30_000).then(({ otlpHttp, http }) => ({ child, otlpHttp, http }));
}

/** An OTLP/JSON logs request with `count` records, each carrying a unique `seq`, one of them a hook execution. */
function logsBody(firstSeq: number, count: number): Buffer {
  const logRecords = Array.from({ length: count }, (_, i) => ({
    timeUnixNano: String(BigInt(Date.now()) * 1_000_000n),
    body: { stringValue: i === 0 ? 'claude_code.hook_execution_complete' : 'claude_code.user_prompt' },
    attributes: [
      { key: 'seq', value: { intValue: String(firstSeq + i) } },
      { key: 'event.name', value: { stringValue: i === 0 ? 'hook_execution_complete' : 'user_prompt' } },
      ...(i === 0 ? [{ key: 'hook_name', value: { stringValue: 'Stop' } }, { key: 'hook_event', value: { stringValue: 'Stop' } }, { key: 'num_hooks', value: { stringValue: '1' } }, { key: 'num_success', value: { stringValue: '1' } }, { key: 'num_outputs_persisted', value: { stringValue: '0' } }, { key: 'stdout_chars', value: { stringValue: '10' } }] : []),
    ],
  }));
  return Buffer.from(JSON.stringify({ resourceLogs: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'claude-code' } }] }, scopeLogs: [{ scope: { name: 'com.anthropic.claude_code.events' }, logRecords }] }] }));
}

/** The seq values in a forwarded body. */
function seqs(body: Buffer): number[] {
  const doc = JSON.parse(body.toString()) as { resourceLogs: { scopeLogs: { logRecords: { attributes: { key: string; value: { intValue?: string } }[] }[] }[] }[] };
  return doc.resourceLogs.flatMap((rl) => rl.scopeLogs.flatMap((sl) => sl.logRecords.map((r) => Number(r.attributes.find((a) => a.key === 'seq')?.value.intValue))));
}

async function until(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

it('loses no acknowledged record through 503s, dropped connections, SIGKILL and restart', { timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-outage-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const downstream = new HttpDownstream();
  const downstreamUrl = await downstream.start();
  cleanups.push(() => downstream.stop());
  downstream.mode = { kind: 'status', status: 503, retryAfter: '0' };
  const env = {
    HOOKWATCH_DB: join(dir, 'hookwatch.db'),
    HOOKWATCH_FORWARD_QUEUE_PATH: join(dir, 'forward-queue.db'),
    HOOKWATCH_OTLP_HTTP_ADDR: '127.0.0.1:0',
    HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0',
    HOOKWATCH_HTTP_ADDR: '127.0.0.1:0',
    HOOKWATCH_FORWARD_ENDPOINT: downstreamUrl,
    HOOKWATCH_FORWARD_PROTOCOL: 'http/json',
    HOOKWATCH_FORWARD_RETRY_INITIAL_INTERVAL: '20ms',
    HOOKWATCH_FORWARD_RETRY_MAX_INTERVAL: '100ms',
  };

  const acked = new Set<number>();
  let nextSeq = 1;
  const send = async (base: string, requests: number): Promise<void> => {
    for (let i = 0; i < requests; i++) {
      const first = nextSeq;
      nextSeq += 5;
      const res = await fetch(`${base}/v1/logs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: logsBody(first, 5) as Uint8Array<ArrayBuffer> }).catch(() => undefined);
      if (res?.status === 200) for (let s = first; s < first + 5; s++) acked.add(s);
      await res?.arrayBuffer();
    }
  };

  let hw = await startHookwatch(env);
  await send(hw.otlpHttp, 10);
  await until('503s downstream', () => downstream.refused >= 5);
  downstream.mode = { kind: 'drop' };
  await send(hw.otlpHttp, 10);
  const refusedBeforeKill = downstream.refused;
  await until('dropped connections', () => downstream.refused >= refusedBeforeKill + 3);
  // Requests in flight while the process dies: whatever got its 200 must survive.
  const inFlight = send(hw.otlpHttp, 5);
  hw.child.kill('SIGKILL');
  await inFlight;
  await new Promise<void>((resolve) => (hw.child.exitCode !== null || hw.child.signalCode !== null ? resolve() : hw.child.once('exit', () => resolve())));
  expect(downstream.requests).toHaveLength(0);
  expect(acked.size).toBeGreaterThanOrEqual(100);

  hw = await startHookwatch(env);
  const status = (await (await fetch(`${hw.http}/api/v1/forwarding`)).json()) as ForwardingResponse;
  expect(status.destinations[0]!.depth).toBeGreaterThanOrEqual(20);
  await send(hw.otlpHttp, 5);
  downstream.mode = { kind: 'accept' };
  await until('every acknowledged record downstream', () => {
    const arrived = new Set(downstream.requests.flatMap((r) => seqs(r.body)));
    return [...acked].every((s) => arrived.has(s));
  });
  // In order of arrival: the first delivery is the oldest request, and seq never goes backwards except for
  // at-least-once repeats of a request cut off mid-answer.
  expect(seqs(downstream.requests[0]!.body)[0]).toBe(1);
  await until('an empty queue', async () => ((await (await fetch(`${hw.http}/api/v1/forwarding`)).json()) as ForwardingResponse).destinations[0]!.depth === 0);
  hw.child.kill('SIGTERM');
  await new Promise<void>((resolve) => hw.child.once('exit', () => resolve()));
});
