/**
 * A real hookwatch process killed with SIGKILL while alerts are firing: after restart there is no duplicate
 * firing notification before repeat_interval, and a resolution is still notified.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { AlertmanagerWebhookBody } from '../notify/alertmanager.ts';
import { otlpHookBody, WebhookSink } from '../../test/support/alerting.ts';

const MAIN = fileURLToPath(new URL('../main.ts', import.meta.url));

interface Proc {
  child: ChildProcess;
  otlpHttpUrl: string;
  httpUrl: string;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Starts `hookwatch serve` and resolves with its URLs once it logs that it started. */
function startHookwatch(dir: string): Promise<Proc> {
  const child = spawn(process.execPath, [MAIN, 'serve'], {
    env: {
      PATH: process.env['PATH'] ?? '',
      HOOKWATCH_CONFIG: join(dir, 'hookwatch.yaml'),
      HOOKWATCH_DB: join(dir, 'h.db'),
      HOOKWATCH_OTLP_HTTP_ADDR: '127.0.0.1:0',
      HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0',
      HOOKWATCH_HTTP_ADDR: '127.0.0.1:0',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  cleanups.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => reject(new Error(`hookwatch did not start: ${buf.slice(-2000)}`)), 20_000);
    child.stderr?.on('data', (c: Buffer) => {
      buf += c.toString('utf8');
      for (const line of buf.split('\n')) {
        if (!line.includes('"hookwatch started"')) continue;
        const msg = JSON.parse(line) as { otlpHttp: string; http: string };
        clearTimeout(timer);
        resolve({ child, otlpHttpUrl: msg.otlpHttp, httpUrl: msg.http });
        return;
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`hookwatch exited with ${code}: ${buf.slice(-2000)}`));
    });
  });
}

async function post(p: Proc, body: string): Promise<void> {
  const res = await fetch(`${p.otlpHttpUrl}/v1/logs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  expect(res.status).toBe(200);
  await res.arrayBuffer();
}

async function deliveredAttempts(p: Proc): Promise<number> {
  const { alerts } = (await (await fetch(`${p.httpUrl}/api/v1/alerts`)).json()) as { alerts: { id: string }[] };
  let n = 0;
  for (const a of alerts) {
    const d = (await (await fetch(`${p.httpUrl}/api/v1/alerts/${a.id}`)).json()) as { attempts: { outcome: string }[] };
    n += d.attempts.filter((x) => x.outcome === 'delivered').length;
  }
  return n;
}

async function until(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function summary(sink: WebhookSink): string[] {
  return sink.bodies<AlertmanagerWebhookBody>().map((b) => `${b.status} ${b.alerts[0]?.labels['alertname']}`);
}

describe('SIGKILL while firing', () => {
  // Two process starts on a shared 2-core machine: give it a minute.
  it('no duplicate firing notification after restart, resolution still notified', { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-restart-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const sink = new WebhookSink();
    await sink.start();
    cleanups.push(() => sink.close());
    writeFileSync(join(dir, 'hookwatch.yaml'), `
alerting:
  evaluationInterval: 100ms
  repeatInterval: 1h
  rules:
    - { kind: persisted, window: 1h }
    - { kind: silence, name: hook_quiet, after: 2500ms, window: 1h }
  receivers:
    - { name: ops, url: "${sink.url}/hook" }
`);
    const first = await startHookwatch(dir);
    await post(first, otlpHookBody([{ hookName: 'SessionStart:startup', timeMs: Date.now(), outputsPersisted: 1, additionalContextChars: 12_000, sessionId: 'a' }]));
    await sink.waitFor(2, 10_000);
    expect(summary(sink).sort()).toEqual(['firing hook_quiet', 'firing persisted']);
    // Kill once hookwatch has recorded both deliveries. (Killed between a delivery and its record, it would
    // resend that notification under the same webhook-id: at-least-once, deduplicated by the receiver.)
    await until(async () => (await deliveredAttempts(first)) === 2);

    first.child.kill('SIGKILL');
    await new Promise((resolve) => first.child.once('exit', resolve));
    const second = await startHookwatch(dir);
    // Well past several evaluation ticks, far short of repeat_interval.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect(summary(sink).sort()).toEqual(['firing hook_quiet', 'firing persisted']);
    const alerts = (await (await fetch(`${second.httpUrl}/api/v1/alerts?state=firing`)).json()) as { alerts: { rule: string; lastNotifiedAt: string | null }[] };
    expect(alerts.alerts.map((a) => a.rule).sort()).toEqual(['hook_quiet', 'persisted']);
    expect(alerts.alerts.every((a) => a.lastNotifiedAt !== null)).toBe(true);

    // The hook is heard again: hook_quiet resolves, and that is notified.
    await post(second, otlpHookBody([{ hookName: 'SessionStart:startup', timeMs: Date.now(), outputsPersisted: 0, additionalContextChars: 100, sessionId: 'b' }]));
    await sink.waitFor(3, 10_000);
    // (Quiet again 2.5 s later, hook_quiet may start a new episode; only the first three matter here.)
    expect(summary(sink).slice(0, 3).sort()).toEqual(['firing hook_quiet', 'firing persisted', 'resolved hook_quiet']);
    expect(summary(sink).filter((s) => s === 'firing persisted')).toHaveLength(1);
    second.child.kill('SIGTERM');
    await new Promise((resolve) => second.child.once('exit', resolve));
  });
});
