/**
 * `kill -HUP` on a real `hookwatch serve` process: the rewritten file's rule and receiver take over without a
 * restart, an invalid file is logged (without its secrets) and the running configuration kept, and the process
 * keeps running throughout.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { until } from '../../test/helpers.ts';
import type { AlertmanagerWebhookBody } from '../notify/alertmanager.ts';
import { otlpHookBody, WebhookSink } from '../../test/support/alerting.ts';
import { startCli } from '../../test/faults/cli-child.ts';

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function summary(s: WebhookSink): string[] {
  return s.bodies<AlertmanagerWebhookBody>().map((b) => `${b.status} ${b.alerts[0]?.labels['alertname']}`);
}

describe('SIGHUP', () => {
  it('reloads the file: the new rule notifies the new receiver; an invalid file is refused and the process runs on', { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-sighup-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const before = new WebhookSink();
    const after = new WebhookSink();
    await before.start();
    await after.start();
    cleanups.push(() => before.close(), () => after.close());
    const file = join(dir, 'hookwatch.yaml');
    const rules = '    - { kind: persisted, window: 1h }\n';
    writeFileSync(file, `alerting:\n  evaluationInterval: 100ms\n  repeatInterval: 1h\n  rules:\n${rules}  receivers:\n    - { name: ops, url: "${before.url}/hook" }\n`);
    const cli = await startCli(dir, { HOOKWATCH_CONFIG: file });
    cleanups.push(() => cli.stop());
    const { child, logs } = cli;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const res = await fetch(`${cli.otlpHttp}/v1/logs`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: otlpHookBody([{ hookName: 'SessionStart:startup', timeMs: Date.now(), outputsPersisted: 1, additionalContextChars: 12_000, sessionId: 'a' }]),
    });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    await before.waitFor(1, 10_000);

    // An invalid file: one error naming the problem, never the secrets in it; the process keeps running.
    writeFileSync(file, `alerting:\n  rules:\n    - { kind: persisted, window: 1h, threshold: 0.5 }\n  receivers:\n    - { name: oncall, url: "${after.url}/sighup-secret-path-token", bearerToken: "sighup-secret-bearer" }\n`);
    child.kill('SIGHUP');
    await until('the refused reload to be logged', () => logs.some((l) => l['msg'] === 'configuration reload failed; the running configuration is kept'), 10_000);
    const failed = logs.filter((l) => l['level'] === 'error');
    expect(failed).toHaveLength(1);
    expect(String(failed[0]?.['problem'])).toContain('alerting.rules[0].threshold');
    expect(child.exitCode).toBeNull();

    writeFileSync(file, `alerting:\n  evaluationInterval: 100ms\n  repeatInterval: 1h\n  rules:\n${rules}    - { kind: persisted, name: persisted_too, window: 1h }\n  receivers:\n    - { name: oncall, url: "${after.url}/sighup-secret-path-token", bearerToken: "sighup-secret-bearer" }\n`);
    child.kill('SIGHUP');
    // The new receiver gets the new rule's alert and the one already firing.
    await after.waitFor(2, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(summary(after).sort()).toEqual(['firing persisted', 'firing persisted_too']);
    expect(after.requests[0]?.headers['authorization']).toBe('Bearer sighup-secret-bearer');
    expect(summary(before)).toEqual(['firing persisted']);
    expect(logs.some((l) => l['msg'] === 'configuration reloaded')).toBe(true);
    expect(child.exitCode).toBeNull();
    // Neither the refused file's secrets (never registered with the log's scrubber) nor the new receiver's are in any line.
    expect(JSON.stringify(logs)).not.toContain('sighup-secret');

    child.kill('SIGTERM');
    await exited;
    expect(child.exitCode).toBe(0);
  });
});
