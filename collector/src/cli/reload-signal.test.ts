/**
 * `kill -HUP` on a real `hookwatch serve` process: the rewritten file's rule and receiver take over without a
 * restart, an invalid file is logged (without its secrets) and the running configuration kept, and the process
 * keeps running throughout. A file mounted from a Kubernetes ConfigMap is replaced the way the kubelet does it,
 * and the next reload reads what it now holds.
 */
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { until } from '../../test/helpers.ts';
import type { AlertmanagerWebhookBody } from '../notify/alertmanager.ts';
import { otlpHookBody, WebhookSink } from '../../test/support/alerting.ts';
import { startCli } from '../../test/faults/cli-child.ts';
import { sampleValue, scrapeMetrics } from '../../test/support/prometheus-text.ts';

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

  it('starts on the defaults from an empty file, but refuses one at a reload (a file cut short while written); a file of comments reloads', { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-empty-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'hookwatch.yaml');
    writeFileSync(file, '');
    const cli = await startCli(dir, { HOOKWATCH_CONFIG: file });
    cleanups.push(() => cli.stop());
    const reloadSuccessful = async (): Promise<number | undefined> => sampleValue((await scrapeMetrics(cli.http)).families, 'hookwatch_config_last_reload_successful');
    const reload = async (): Promise<{ status: number; body: unknown }> => {
      const res = await fetch(`${cli.http}/-/reload`, { method: 'POST' });
      return { status: res.status, body: await res.json() };
    };
    writeFileSync(file, 'alerting:\n  receivers:\n    - { name: ops, url: "https://hooks.example.com/empty-secret-path" }\n');
    expect(await reload()).toEqual({ status: 200, body: { status: 'success', restartRequired: [] } });

    // A document of no settings too: a file cut short after its first line, `---`.
    for (const text of ['', ' \n\t\n', '---\n', 'null\n', '~\n', '{}\n']) {
      writeFileSync(file, text);
      const refused = await reload();
      expect(refused.status).toBe(400);
      expect(refused.body).toEqual({ error: { code: 'invalid_config', message: expect.stringContaining(`config file ${file} is empty`) as string } });
      expect(await reloadSuccessful()).toBe(0);
      const failed = cli.logs.filter((l) => l['msg'] === 'configuration reload failed; the running configuration is kept');
      expect(String(failed.at(-1)?.['problem'])).toContain(`config file ${file} is empty`);
    }
    // A refused alerting.externalUrl that is no URL may be credentials written wrongly: never in the answer or the log.
    writeFileSync(file, 'alerting:\n  externalUrl: "http//admin:SuperSecretValue123456@hw.example.com/"\n');
    const badUrl = await reload();
    expect(badUrl.status).toBe(400);
    expect(JSON.stringify(badUrl.body)).toContain('invalid value \\"<unparsable URL redacted>\\" for alerting.externalUrl: expected an http:// or https:// URL');
    expect(JSON.stringify([badUrl.body, cli.logs])).not.toContain('SuperSecretValue123456');
    // The same by SIGHUP: logged, the process runs on.
    const before = cli.logs.length;
    cli.child.kill('SIGHUP');
    await until('the refused reload to be logged', () => cli.logs.slice(before).some((l) => l['msg'] === 'configuration reload failed; the running configuration is kept'), 10_000);
    expect(cli.child.exitCode).toBeNull();

    // Comments only are written on purpose (every setting commented out): read as the defaults.
    writeFileSync(file, '# hookwatch.yaml: every setting left at its default\n# alerting:\n#   receivers: []\n');
    expect(await reload()).toEqual({ status: 200, body: { status: 'success', restartRequired: [] } });
    writeFileSync(file, '---\n# every setting left at its default\n');
    expect(await reload()).toEqual({ status: 200, body: { status: 'success', restartRequired: [] } });
    expect(await reloadSuccessful()).toBe(1);
  });

  it('reads a ConfigMap volume as the kubelet updates it (a new folder behind the ..data symlink), on POST /-/reload and on SIGHUP', { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-configmap-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    // The layout of a ConfigMap volume: each key a symlink into ..data, itself a symlink to the current folder,
    // which an update replaces by renaming a new symlink over ..data (never a write to the file in place).
    const volume = join(dir, 'config');
    mkdirSync(volume);
    let version = 0;
    const publish = (text: string): void => {
      const folder = `..${++version}`;
      mkdirSync(join(volume, folder));
      writeFileSync(join(volume, folder, 'hookwatch.yaml'), text);
      symlinkSync(folder, join(volume, '..data_tmp'));
      renameSync(join(volume, '..data_tmp'), join(volume, '..data'));
      if (version > 1) rmSync(join(volume, `..${version - 1}`), { recursive: true });
    };
    // The config file the Kubernetes manifests ship.
    const shipped = readFileSync(fileURLToPath(new URL('../../../deploy/kubernetes/base/hookwatch.yaml', import.meta.url)), 'utf8');
    expect(shipped).toContain('maxHookSeries: 500');
    publish(shipped);
    symlinkSync('..data/hookwatch.yaml', join(volume, 'hookwatch.yaml'));
    const cli = await startCli(dir, { HOOKWATCH_CONFIG: join(volume, 'hookwatch.yaml') });
    cleanups.push(() => cli.stop());

    publish(shipped.replace('maxHookSeries: 500', 'maxHookSeries: 600'));
    const res = await fetch(`${cli.http}/-/reload`, { method: 'POST' });
    expect(res.status).toBe(200);
    // The new content was read: the changed setting is one that keeps its running value until a restart.
    expect(await res.json()).toEqual({ status: 'success', restartRequired: ['metrics.maxHookSeries'] });

    publish(shipped);
    const reloaded = cli.logs.length;
    cli.child.kill('SIGHUP');
    await until('the reload to be logged', () => cli.logs.slice(reloaded).some((l) => String(l['msg']).startsWith('configuration reloaded')), 10_000);
    // Back to the running value: nothing waits for a restart any more.
    expect(cli.logs.slice(reloaded).map((l) => l['msg'])).toContain('configuration reloaded');
    expect(cli.child.exitCode).toBeNull();
  });
});
