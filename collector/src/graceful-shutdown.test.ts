/**
 * SIGTERM of the real `hookwatch serve` process (a child process, real sockets, a real SQLite file) while
 * clients keep sending: every record that got a 200 is in the store afterwards, and the process exits 0
 * within the shutdown bound. While it drains, /readyz says not ready and /healthz still answers. A hung client
 * cannot hold it past the bound, nor can a step waiting on nothing end it early and silently; a slow but healthy
 * alert event endpoint gets the time its export is allowed; a second signal exits at once. A retention pass under
 * way (a large file's first pass takes seconds) ends between two batches instead of holding the stop.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from './store/sqlite/index.ts';
import { otlpAccepted, otlpHookBody, WebhookSink } from '../test/support/alerting.ts';
import { holdRequest } from '../test/support/held-request.ts';
import { loadHistory } from '../test/support/history.ts';
import { isolatedEnv } from '../test/support/service.ts';
import { waitForStarted, type StartedLine } from '../test/support/started.ts';

const MAIN = fileURLToPath(new URL('./main.ts', import.meta.url));
const STORE = new URL('./store/sqlite/index.ts', import.meta.url).href;
/** Child processes start in ~3 s; on a machine busy with other test runs it can take several times that. */
const START_TIMEOUT_MS = 45_000;
const TEST_TIMEOUT_MS = 90_000;

/** A running `hookwatch serve`: the URLs of its start line, every stderr line, and when it exits. */
interface Child extends Pick<StartedLine, 'otlpHttp' | 'http'> {
  proc: ChildProcess;
  lines: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; atMs: number }>;
}

const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function startChild(dir: string, env: Record<string, string> = {}, nodeArgs: string[] = []): Promise<Child> {
  const proc = spawn(process.execPath, [...nodeArgs, MAIN, 'serve'], {
    env: { PATH: process.env['PATH'] ?? '', ...isolatedEnv(dir), HOOKWATCH_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(proc);
  const lines: string[] = [];
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; atMs: number }>((resolve) => {
    proc.on('exit', (code, signal) => resolve({ code, signal, atMs: performance.now() }));
  });
  const { otlpHttp, http } = await waitForStarted(proc, START_TIMEOUT_MS, (line) => lines.push(line));
  return { proc, lines, exited, otlpHttp, http };
}

/** An OTLP/JSON logs body with `n` unique hook_execution_complete records for one hook. */
function body(hookName: string, batch: number, n: number): string {
  const logRecords = Array.from({ length: n }, (_, i) => {
    const attributes = Object.entries({
      'event.name': 'hook_execution_complete', 'session.id': `${hookName}-${batch}`, 'event.sequence': String(i),
      'event.timestamp': new Date().toISOString(), hook_event: 'PostToolUse', hook_name: hookName, num_hooks: '1', num_success: '1',
      num_blocking: '0', num_non_blocking_error: '0', num_cancelled: '0', total_duration_ms: '5', stdout_chars: '120',
      additional_context_chars: '4000', system_message_chars: '0', initial_user_message_chars: '0', num_outputs_persisted: '0',
    }).map(([key, v]) => ({ key, value: { stringValue: v } }));
    return { timeUnixNano: String(BigInt(Date.now()) * 1_000_000n), body: { stringValue: 'claude_code.hook_execution_complete' }, attributes };
  });
  return JSON.stringify({
    resourceLogs: [{
      resource: { attributes: [{ key: 'service.name', value: { stringValue: 'claude-code' } }, { key: 'service.version', value: { stringValue: '2.1.332' } }] },
      scopeLogs: [{ scope: { name: 'com.anthropic.claude_code.events', version: '2.1.332' }, logRecords }],
    }],
  });
}

async function waitForLine(child: Child, msg: string): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (!child.lines.some((l) => l.includes(`"msg":"${msg}"`))) {
    if (performance.now() > deadline) throw new Error(`no "${msg}" line: ${child.lines.join('\n')}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** When the child logged `msg` (its line's time, ms since the epoch). */
function lineTime(child: Child, msg: string): number {
  const line = child.lines.find((l) => l.includes(`"msg":"${msg}"`));
  if (!line) throw new Error(`no "${msg}" line: ${child.lines.join('\n')}`);
  return Date.parse((JSON.parse(line) as { time: string }).time);
}

describe('graceful shutdown of hookwatch serve', { timeout: TEST_TIMEOUT_MS }, () => {
  it('SIGTERM under load: every acknowledged record is stored and the process exits 0 within the bound', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-shutdown-'));
    dirs.push(dir);
    const boundMs = 10_000;
    const child = await startChild(dir, { HOOKWATCH_SHUTDOWN_TIMEOUT: `${boundMs}ms` });
    const WORKERS = 8;
    const PER_REQUEST = 25;
    const acked = new Map<string, number>();
    const sent = new Map<string, number>();
    let stopAt = Infinity;
    let ackedAfterSignal = 0;
    let signalAt = Infinity;
    const worker = async (w: number): Promise<void> => {
      const hook = `PostToolUse:load-${w}`;
      // Bounded: at most 400 requests per worker, and never past 20 s.
      for (let batch = 0; batch < 400 && performance.now() < stopAt; batch++) {
        sent.set(hook, (sent.get(hook) ?? 0) + PER_REQUEST);
        try {
          const res = await fetch(`${child.otlpHttp}/v1/logs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body(hook, batch, PER_REQUEST), signal: AbortSignal.timeout(15_000) });
          await res.arrayBuffer();
          if (res.status === 200) {
            acked.set(hook, (acked.get(hook) ?? 0) + PER_REQUEST);
            if (performance.now() > signalAt) ackedAfterSignal++;
          }
        } catch {
          // Refused or reset once the receiver stopped: not acknowledged, so the client still owns it.
          if (performance.now() > signalAt) return;
        }
      }
    };
    stopAt = performance.now() + 20_000;
    const load = Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));
    // Let the load build up, then terminate mid-stream.
    const loadDeadline = performance.now() + 15_000;
    while ([...acked.values()].reduce((a, b) => a + b, 0) < 2000 && performance.now() < loadDeadline) await new Promise((r) => setTimeout(r, 10));
    expect([...acked.values()].reduce((a, b) => a + b, 0), 'records acknowledged before SIGTERM').toBeGreaterThan(0);
    signalAt = performance.now();
    child.proc.kill('SIGTERM');
    const exit = await child.exited;
    stopAt = 0;
    await load;
    const tookMs = exit.atMs - signalAt;
    expect(exit.code, child.lines.join('\n')).toBe(0);
    expect(tookMs).toBeLessThan(boundMs);
    expect(child.lines.some((l) => l.includes('"msg":"stopped"'))).toBe(true);

    const store = new SqliteStore({ path: join(dir, 'hookwatch.db') });
    try {
      const counters = await store.hookCounters({ fromMs: Date.now() - 3_600_000, toMs: Date.now() + 3_600_000 });
      const stored = new Map([...counters.values()].map((c) => [c.info.hookName, c.executions]));
      for (const [hook, n] of acked) {
        expect(stored.get(hook), hook).toBeGreaterThanOrEqual(n);
        expect(stored.get(hook), hook).toBeLessThanOrEqual(sent.get(hook) ?? 0);
      }
      const total = [...acked.values()].reduce((a, b) => a + b, 0);
      // Figures for the report (vitest prints them with --reporter=verbose when run on their own).
      process.stderr.write(`shutdown under load: ${total} records acknowledged by ${WORKERS} clients, ${ackedAfterSignal} requests acknowledged after SIGTERM, exit 0 after ${Math.round(tookMs)} ms\n`);
    } finally {
      await store.close();
    }
  });

  it('a hung client cannot hold the process past shutdown.timeout', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-shutdown-'));
    dirs.push(dir);
    const child = await startChild(dir, { HOOKWATCH_SHUTDOWN_TIMEOUT: '1s', HOOKWATCH_OTLP_REQUEST_TIMEOUT: '60s' });
    await holdRequest(child.otlpHttp);
    const t0 = performance.now();
    child.proc.kill('SIGTERM');
    const exit = await child.exited;
    expect(exit.code).toBe(1);
    expect(exit.atMs - t0).toBeGreaterThanOrEqual(900);
    // Far below the 60 s the hung request could otherwise hold it (margin for a busy machine).
    expect(exit.atMs - t0).toBeLessThan(8000);
    // The line names what the stop still waited on: the request the client holds open.
    const last = JSON.parse(child.lines.findLast((l) => l.includes('shutdown took too long')) ?? '{}') as { pending?: string[] };
    expect(last.pending, child.lines.join('\n')).toEqual(['OTLP requests in flight']);
  });

  it('a step waiting on a promise that never settles, with nothing else left to run, still ends in the final line and exit 1 within the bound', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-shutdown-'));
    dirs.push(dir);
    // Closing the store waits on work that will never end and holds no handle: without a timer of its own the
    // event loop would run dry and the process exit 0 at once, silently, the store still open.
    const preload = join(dir, 'hang-store-close.mjs');
    writeFileSync(preload, `import { SqliteStore } from ${JSON.stringify(STORE)};\nSqliteStore.prototype.close = () => new Promise(() => {});\n`);
    const child = await startChild(dir, { HOOKWATCH_SHUTDOWN_TIMEOUT: '1500ms' }, ['--import', preload]);
    const t0 = performance.now();
    child.proc.kill('SIGTERM');
    const exit = await child.exited;
    expect(exit.code, child.lines.join('\n')).toBe(1);
    expect(exit.atMs - t0).toBeGreaterThanOrEqual(1400);
    // Margin for a busy machine; what matters is that it waited for the bound, and not for ever.
    expect(exit.atMs - t0).toBeLessThan(10_000);
    expect(JSON.parse(child.lines.at(-1) ?? '{}')).toMatchObject({ level: 'error', msg: 'shutdown took too long; exiting', pending: ['store close'], unfinished: [] });
  });

  it('an alert event endpoint that answers within the export timeout, if slowly, gets its answer at stop: the exit is 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-shutdown-'));
    dirs.push(dir);
    // Healthy but slow: each export is answered 3.5 s after it arrives, within the exporter's own 5 s.
    const endpoint = new WebhookSink();
    endpoint.reply = (req) => ({ ...otlpAccepted(req), delayMs: 3500 });
    await endpoint.start();
    try {
      const config = join(dir, 'hookwatch.yaml');
      writeFileSync(config, JSON.stringify({ alerting: { rules: [{ kind: 'persisted', window: '1h' }], otlp: { endpoint: endpoint.url } } }));
      // shutdown.timeout and postgres.leaseTtl at their defaults.
      const child = await startChild(dir, { HOOKWATCH_CONFIG: config });
      const res = await fetch(`${child.otlpHttp}/v1/logs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: otlpHookBody([{ hookName: 'PostToolUse:slow-endpoint', timeMs: Date.now(), outputsPersisted: 1, additionalContextChars: 12_000, sessionId: 's1' }]) });
      expect(res.status).toBe(200);
      // The alert's event is on its way: the stop finds its export waiting for the answer.
      await endpoint.waitFor(1, 15_000);
      const t0 = performance.now();
      child.proc.kill('SIGTERM');
      const exit = await child.exited;
      const log = child.lines.join('\n');
      expect(exit.code, log).toBe(0);
      expect(child.lines.some((l) => l.includes('"msg":"stopped"')), log).toBe(true);
      expect(log).not.toContain('shutdown step timed out');
      expect(log).not.toContain('alert event export cut off');
      // It waited for the answer, which came once: the event was exported, not sent again.
      expect(exit.atMs - t0, log).toBeGreaterThan(2500);
      expect(endpoint.requests.map((r) => r.body.includes('PostToolUse:slow-endpoint'))).toEqual([true]);
    } finally {
      await endpoint.close();
    }
  });

  it('while it drains, /readyz answers 503 and /healthz 200: the Service stops routing to the pod, the kubelet does not restart it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-shutdown-'));
    dirs.push(dir);
    const child = await startChild(dir, { HOOKWATCH_SHUTDOWN_TIMEOUT: '60s', HOOKWATCH_OTLP_REQUEST_TIMEOUT: '60s' });
    expect((await fetch(`${child.http}/readyz`)).status).toBe(200);
    // The hung request holds the drain open, as a slow client's upload does during a rolling update.
    const { req: hung } = await holdRequest(child.otlpHttp);
    child.proc.kill('SIGTERM');
    await waitForLine(child, 'shutting down');
    const ready = await fetch(`${child.http}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ status: 'not ready' });
    const healthz = await fetch(`${child.http}/healthz`);
    expect(healthz.status).toBe(200);
    await healthz.arrayBuffer();
    expect(child.proc.exitCode).toBeNull(); // still draining
    hung.destroy();
    const exit = await child.exited;
    expect(exit.code, child.lines.join('\n')).toBe(0);
  });

  it('a SIGHUP once the stop has begun is refused, logged at info, and the stop goes on', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-shutdown-'));
    dirs.push(dir);
    const child = await startChild(dir, { HOOKWATCH_SHUTDOWN_TIMEOUT: '60s', HOOKWATCH_OTLP_REQUEST_TIMEOUT: '60s' });
    // The hung request holds the stop until it goes.
    const { req: hung } = await holdRequest(child.otlpHttp);
    child.proc.kill('SIGTERM');
    await waitForLine(child, 'shutting down');
    child.proc.kill('SIGHUP');
    await waitForLine(child, 'hookwatch is stopping; the configuration is not reloaded');
    const refused = child.lines.find((l) => l.includes('"msg":"hookwatch is stopping; the configuration is not reloaded"'));
    expect(JSON.parse(refused ?? '{}')).toMatchObject({ level: 'info', signal: 'SIGHUP' });
    hung.destroy();
    const exit = await child.exited;
    expect(exit.code, child.lines.join('\n')).toBe(0);
    expect(child.lines.filter((l) => l.includes('"msg":"configuration reload'))).toEqual([]);
  });

  it('SIGTERM during a long retention pass ends it between two batches: exit 0, the next start deletes the rest', async () => {
    // Two copies of one file holding 40,000 events past retention.events (30 days), for the pass at start.
    const [whole, stopped] = [0, 1].map(() => {
      const dir = mkdtempSync(join(tmpdir(), 'hookwatch-shutdown-'));
      dirs.push(dir);
      return dir;
    }) as [string, string];
    const now = Date.now();
    const seeded = new SqliteStore({ path: join(whole, 'hookwatch.db') });
    await loadHistory(seeded, { events: 40_000, fromMs: now - 50 * 86_400_000, toMs: now - 40 * 86_400_000, hooks: 200 });
    await seeded.close();
    for (const file of ['hookwatch.db', 'hookwatch.db-wal']) if (existsSync(join(whole, file))) copyFileSync(join(whole, file), join(stopped, file));
    const removed = (child: Child): number => (JSON.parse(child.lines.find((l) => l.includes('"msg":"retention removed old data"')) ?? '{}') as { events?: number }).events ?? 0;

    // The pass run to its end, for how long it takes: from the start line on (it began before), a lower bound.
    const first = await startChild(whole);
    await waitForLine(first, 'retention removed old data');
    first.proc.kill('SIGTERM');
    expect((await first.exited).code, first.lines.join('\n')).toBe(0);
    expect(removed(first)).toBe(40_000);
    const passMs = lineTime(first, 'retention removed old data') - lineTime(first, 'hookwatch started');

    // The same pass, SIGTERM as soon as the process has started.
    const child = await startChild(stopped);
    child.proc.kill('SIGTERM');
    const exit = await child.exited;
    const log = child.lines.join('\n');
    expect(exit.code, log).toBe(0);
    const stopMs = lineTime(child, 'retention run stopped: hookwatch is stopping; the next run deletes the rest') - lineTime(child, 'shutting down');
    expect(stopMs / passMs, `the pass stopped ${stopMs} ms after SIGTERM; the whole pass took over ${passMs} ms`).toBeLessThan(0.5);
    const deleted = removed(child);
    expect(deleted).toBeGreaterThan(0);
    expect(deleted).toBeLessThan(40_000);

    // The next start's pass deletes the rest.
    const next = await startChild(stopped);
    await waitForLine(next, 'retention removed old data');
    next.proc.kill('SIGTERM');
    expect((await next.exited).code, next.lines.join('\n')).toBe(0);
    expect(removed(next)).toBe(40_000 - deleted);
  });

  it('a second SIGTERM exits at once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-shutdown-'));
    dirs.push(dir);
    const child = await startChild(dir, { HOOKWATCH_SHUTDOWN_TIMEOUT: '60s', HOOKWATCH_OTLP_REQUEST_TIMEOUT: '60s' });
    await holdRequest(child.otlpHttp);
    child.proc.kill('SIGTERM');
    await waitForLine(child, 'shutting down');
    await new Promise((r) => setTimeout(r, 300));
    expect(child.proc.exitCode).toBeNull(); // still draining: the hung request holds it
    const t0 = performance.now();
    child.proc.kill('SIGTERM');
    const exit = await child.exited;
    expect(exit.code).toBe(1);
    // At once: the first signal's drain would take 60 s here (hung request, 60 s bound).
    expect(exit.atMs - t0).toBeLessThan(3000);
    expect(child.lines.some((l) => l.includes('second signal'))).toBe(true);
  });
});
