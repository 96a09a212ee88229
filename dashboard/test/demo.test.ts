/**
 * `npm run demo` as a user runs it: a child process, real exporters, a real hookwatch. Within a minute the
 * dashboard must show the growing hook over the cliff and a firing alert for it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import type { AlertsResponse, HooksResponse } from '../../shared/src/api.ts';
import { startTestService, type TestService } from '../../collector/test/helpers.ts';
import { chartData, launch, screenshot, waitLoaded, watchedPage } from './harness.ts';

const DEMO = fileURLToPath(new URL('../demo/index.ts', import.meta.url));

let child: ChildProcess | undefined;
let browser: Browser | undefined;
/**
 * The folder the demo is started in, as a person starts it in the hookwatch folder where their own hookwatch runs,
 * forwarding through its queue in ./data/: the demo must leave that hookwatch's files alone.
 */
const cwd = mkdtempSync(join(tmpdir(), 'hookwatch-demo-cwd-'));
const backend = createServer((req, res) => req.resume().on('end', () => res.writeHead(200).end()));
/**
 * A real team's backend and pager, named in the shell the demo is started from (a forward endpoint, an alert event
 * endpoint, a config file with a webhook receiver): the demo's simulated telemetry and alerts must reach none of them.
 */
const reached: string[] = [];
const real = createServer((req, res) => {
  reached.push(`${req.method} ${req.url}`);
  req.resume().on('end', () => res.writeHead(200).end());
});
let own: TestService | undefined;

afterAll(async () => {
  await browser?.close();
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child?.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
  await own?.close();
  backend.close();
  real.close();
  rmSync(cwd, { recursive: true, force: true });
});

describe('npm run demo', () => {
  it('shows a cliff and an alert within a minute', async () => {
    await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
    mkdirSync(join(cwd, 'data'));
    own = await startTestService({ HOOKWATCH_FORWARD_ENDPOINT: `http://127.0.0.1:${(backend.address() as AddressInfo).port}`, HOOKWATCH_FORWARD_QUEUE_PATH: join(cwd, 'data', 'forward-queue.db') });
    const ownFiles = readdirSync(join(cwd, 'data')).sort();
    await new Promise<void>((r) => real.listen(0, '127.0.0.1', r));
    const realUrl = `http://127.0.0.1:${(real.address() as AddressInfo).port}`;
    const realConfig = join(cwd, 'data', 'team.yaml');
    writeFileSync(realConfig, `alerting:\n  receivers:\n    - name: oncall\n      type: webhook\n      url: ${realUrl}/page-the-team\n`);
    const started = Date.now();
    child = spawn(process.execPath, [DEMO, '--seconds', '90', '--cross-after', '4s'], {
      env: {
        ...process.env,
        HOOKWATCH_HTTP_ADDR: '127.0.0.1:0',
        HOOKWATCH_OTLP_HTTP_ADDR: '127.0.0.1:0',
        HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0',
        HOOKWATCH_FORWARD_ENDPOINT: `${realUrl}/forward`,
        HOOKWATCH_ALERT_OTLP_ENDPOINT: `${realUrl}/alert-events`,
        HOOKWATCH_CONFIG: realConfig,
        HOOKWATCH_DB: join(cwd, 'data', 'team.db'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      cwd,
    });
    let out = '';
    child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr?.on('data', (b: Buffer) => (out += b.toString()));
    const base = await new Promise<string>((resolve, reject) => {
      const t = setInterval(() => {
        const m = /dashboard:\s+(http:\/\/127\.0\.0\.1:\d+)\//.exec(out);
        if (m?.[1]) {
          clearInterval(t);
          resolve(m[1]);
        } else if (child?.exitCode !== null || Date.now() - started > 45_000) {
          clearInterval(t);
          reject(new Error(`demo did not start: ${out}`));
        }
      }, 100);
    });
    let growing: HooksResponse['hooks'][number] | undefined;
    let firing = false;
    while (Date.now() - started < 60_000) {
      const hooks = (await (await fetch(`${base}/api/v1/hooks?from=now-30d`)).json()) as HooksResponse;
      growing = hooks.hooks.find((h) => h.hookName === 'PostToolUse:Edit');
      const alerts = (await (await fetch(`${base}/api/v1/alerts`)).json()) as AlertsResponse;
      firing = alerts.alerts.some((a) => a.state === 'firing' && a.rule === 'persisted' && a.labels['hook_name'] === 'PostToolUse:Edit');
      if (growing?.status === 'over' && firing) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(growing?.status).toBe('over');
    expect(firing).toBe(true);
    expect(Date.now() - started).toBeLessThan(60_000);
    // Everything the demo keeps is in its temporary folder, the forward queue as the database: nothing beside the
    // files of the hookwatch running there, and no warning about that one's queue.
    expect([readdirSync(cwd), readdirSync(join(cwd, 'data')).sort()]).toEqual([['data'], [...ownFiles, 'team.yaml'].sort()]);
    expect(out).not.toMatch(/forward queue/);
    // The start said once which settings the demo left out.
    expect(out.match(/ignores HOOKWATCH_/g)?.length).toBe(1);
    expect(out).toMatch(/ignores HOOKWATCH_ALERT_OTLP_ENDPOINT, HOOKWATCH_CONFIG, HOOKWATCH_DB, HOOKWATCH_FORWARD_ENDPOINT\b/);
    expect(out).not.toContain(realUrl);

    // The old client is blind (unknown), never healthy; the near hook is near.
    const hooks = (await (await fetch(`${base}/api/v1/overview?from=now-30d`)).json()) as { clientVersions: { version: string; hasSizeData: boolean }[] };
    expect(hooks.clientVersions.find((v) => v.version === '2.1.250')?.hasSizeData).toBe(false);

    browser = await launch();
    const w = await watchedPage(browser);
    try {
      await w.page.goto(`${base}/hooks/${growing?.id}?range=1h`);
      await waitLoaded(w.page);
      const cliff = await chartData(w.page, 'chart-cliff');
      expect(cliff.datasets.find((d) => d.label === 'bucket with persisted outputs')?.data.some((v) => typeof v === 'number')).toBe(true);
      await screenshot(w.page, 'demo-hook');
      await w.page.goto(`${base}/?range=7d`);
      await waitLoaded(w.page);
      expect(await w.page.getAttribute('#hook-rows tr:first-child', 'data-status')).toBe('over');
      await screenshot(w.page, 'demo-overview');
      expect(w.errors).toEqual([]);
    } finally {
      await w.close();
    }
    // The alert fired seconds ago, and the demo has been forwarding all along: nothing real was reached.
    expect(reached).toEqual([]);
  }, 90_000);
});
