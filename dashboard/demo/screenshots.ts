/**
 * `npm run demo:screenshots`: runs the demo (`npm run demo`) until its growing hook is over the cap and an alert
 * fires, then saves every page in light and dark, desktop (1440x900) and phone (390x844), to docs/screenshots/.
 */
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { AlertsResponse, HooksResponse } from '../../shared/src/api.ts';
import { launch, waitLoaded } from '../test/harness.ts';

const DEMO = fileURLToPath(new URL('./index.ts', import.meta.url));
const OUT = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));

const child = spawn(process.execPath, [DEMO, '--seconds', '120', '--cross-after', '4s'], {
  env: { ...process.env, HOOKWATCH_HTTP_ADDR: '127.0.0.1:0', HOOKWATCH_OTLP_HTTP_ADDR: '127.0.0.1:0', HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0' },
  stdio: ['ignore', 'pipe', 'pipe'],
});
let out = '';
child.stdout.on('data', (b: Buffer) => (out += b.toString()));
child.stderr.on('data', (b: Buffer) => (out += b.toString()));
try {
  const started = Date.now();
  let base: string | undefined;
  while (!base) {
    if (Date.now() - started > 60_000 || child.exitCode !== null) throw new Error(`demo did not start: ${out}`);
    base = /dashboard:\s+(http:\/\/127\.0\.0\.1:\d+)\//.exec(out)?.[1];
    await new Promise((r) => setTimeout(r, 200));
  }
  let growing: string | undefined;
  while (Date.now() - started < 90_000) {
    const hooks = (await (await fetch(`${base}/api/v1/hooks?from=now-30d`)).json()) as HooksResponse;
    const g = hooks.hooks.find((h) => h.hookName === 'PostToolUse:Edit');
    const alerts = (await (await fetch(`${base}/api/v1/alerts`)).json()) as AlertsResponse;
    if (g?.status === 'over' && alerts.alerts.some((a) => a.state === 'firing' && a.rule === 'persisted')) {
      growing = g.id;
      break;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  if (!growing) throw new Error('the demo hook did not cross the cap in time');
  mkdirSync(OUT, { recursive: true });
  const browser = await launch();
  try {
    const pages: [string, string][] = [['overview', '/?range=7d'], ['hook', `/hooks/${growing}?range=1h`], ['alerts', '/alerts?range=7d'], ['forwarding', '/forwarding']];
    for (const colorScheme of ['light', 'dark'] as const) {
      for (const [device, viewport] of [['desktop', { width: 1440, height: 900 }], ['phone', { width: 390, height: 844 }]] as const) {
        const context = await browser.newContext({ viewport, colorScheme, deviceScaleFactor: 1, timezoneId: 'UTC' });
        const page = await context.newPage();
        for (const [name, path] of pages) {
          await page.goto(`${base}${path}${path.includes('?') ? '&' : '?'}refresh=off`);
          await waitLoaded(page);
          await page.waitForTimeout(300);
          await page.screenshot({ path: `${OUT}${name}-${colorScheme}-${device}.png` });
        }
        await context.close();
      }
    }
  } finally {
    await browser.close();
  }
  console.log(`saved to ${OUT}`);
} finally {
  if (child.exitCode === null) {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
}
