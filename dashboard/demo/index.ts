/**
 * `npm run demo`: hookwatch on a temporary database plus a simulated fleet sending Claude Code 2.1.332-shaped
 * telemetry through the real OpenTelemetry SDK and OTLP/HTTP exporter. Healthy hooks, one near the cap, one
 * whose output grows day by day (14 days backfilled) and crosses the cap live, one old client without size data.
 *
 *   npm run demo                          dashboard on http://127.0.0.1:9318/ (HOOKWATCH_HTTP_ADDR to change)
 *   npm run demo -- --cross-after 10s     how long until the growing hook crosses the cap (default 20s)
 *   npm run demo -- --seconds 60          stop by itself after that long (default: run until Ctrl-C)
 *
 * It forwards nothing and notifies nobody: forwarding, alert event export, a config file (receivers) and the
 * database of the environment are left out.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig, parseDuration, toConfig } from '../../collector/src/config/index.ts';
import { startService, type RunningService } from '../../collector/src/service.ts';
import { createLogger } from '../../collector/src/telemetry/logger.ts';
import type { HooksResponse } from '../../shared/src/api.ts';
import { SimulatedClient, type ClientSpec, type Execution } from './fleet.ts';
import { startedAsScript } from '../../collector/src/tools/common/entry.ts';

const DAY = 86_400_000;
const BACKFILL_DAYS = 14;

/** A deterministic pseudo-random source, so two demo runs draw the same fleet. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

interface HookPlan {
  client: string;
  hookEvent: string;
  hookName: string;
  /** Executions per backfilled day. */
  perDay: number;
  /** Size of the output at a time (ms), given the demo's start and a random draw. */
  size(t: number, r: number): Omit<Execution, 'hookEvent' | 'hookName' | 'timeMs'>;
}

export interface DemoOptions {
  /** Seconds of live traffic until the growing hook crosses the cap. */
  crossAfterMs: number;
  now?: () => number;
}

/** The fleet: who runs which hook, and how big its output is over time. */
export function fleetPlan(startMs: number, opts: DemoOptions): { clients: Record<string, ClientSpec>; hooks: HookPlan[] } {
  const clients: Record<string, ClientSpec> = {
    alice: { userId: 'alice@example.com', team: 'platform', version: '2.1.332' },
    bob: { userId: 'bob@example.com', team: 'platform', version: '2.1.332' },
    carol: { userId: 'carol@example.com', team: 'data', version: '2.1.330' },
    erin: { userId: 'erin@example.com', team: 'data', version: '2.1.332' },
    dave: { userId: 'dave@example.com', team: 'data', version: '2.1.250' },
  };
  // Grows ~300 characters a day, reaching 9,500 at the start of the demo; then crosses 10,000 after crossAfterMs.
  const growing = (t: number): number => {
    if (t <= startMs) return Math.round(9_500 - ((startMs - t) / DAY) * 300);
    return Math.round(Math.min(12_500, 9_500 + ((t - startMs) / opts.crossAfterMs) * 600));
  };
  const hooks: HookPlan[] = [
    { client: 'alice', hookEvent: 'SessionStart', hookName: 'SessionStart:startup', perDay: 6, size: (_t, r) => {
      const ctx = 3_000 + Math.round(r * 1_200);
      return { numHooks: 2, additionalContext: ctx, stdout: ctx + 620, durationMs: 300 };
    } },
    { client: 'alice', hookEvent: 'PreToolUse', hookName: 'PreToolUse:Bash', perDay: 30, size: (_t, r) => ({ stdout: 40 + Math.round(r * 160), durationMs: 20 }) },
    { client: 'alice', hookEvent: 'Stop', hookName: 'Stop', perDay: 8, size: () => ({ stdout: 10, durationMs: 5 }) },
    { client: 'bob', hookEvent: 'UserPromptSubmit', hookName: 'UserPromptSubmit', perDay: 12, size: (_t, r) => {
      const ctx = 8_400 + Math.round(r * 1_000);
      return { additionalContext: ctx, stdout: ctx + 77, durationMs: 90 };
    } },
    { client: 'carol', hookEvent: 'PostToolUse', hookName: 'PostToolUse:Edit', perDay: 10, size: (t, r) => {
      const ctx = growing(t) - Math.round(r * 150);
      return { additionalContext: ctx, stdout: ctx + 77, durationMs: 150 };
    } },
    { client: 'erin', hookEvent: 'PostToolUse', hookName: 'PostToolUse:Write', perDay: 15, size: (_t, r) => {
      const ctx = 1_000 + Math.round(r * 1_000);
      return { additionalContext: ctx, systemMessage: 180, stdout: ctx + 260, durationMs: 60 };
    } },
    { client: 'dave', hookEvent: 'UserPromptSubmit', hookName: 'UserPromptSubmit', perDay: 10, size: () => ({ stdout: 0, durationMs: 80 }) },
    { client: 'dave', hookEvent: 'SessionStart', hookName: 'SessionStart:startup', perDay: 4, size: () => ({ numHooks: 2, stdout: 0, durationMs: 280 }) },
  ];
  return { clients, hooks };
}

function flags(argv: string[]): { crossAfterMs: number; seconds: number | null } {
  const { values } = parseArgs({ args: argv, options: { 'cross-after': { type: 'string' }, seconds: { type: 'string' }, help: { type: 'boolean' } }, allowPositionals: false });
  if (values.help) {
    console.log('usage: npm run demo [-- --cross-after 20s] [--seconds N]');
    process.exit(0);
  }
  const cross = values['cross-after'] === undefined ? 20_000 : parseDuration(values['cross-after']);
  if (cross === undefined || cross < 1000) throw new Error('--cross-after must be a duration of at least 1s (e.g. 20s)');
  const seconds = values.seconds === undefined ? null : Number(values.seconds);
  if (seconds !== null && !(seconds > 0)) throw new Error('--seconds must be a positive number');
  return { crossAfterMs: cross, seconds };
}

/**
 * Settings of the environment that would take the demo's simulated telemetry and alerts somewhere real: a forward
 * endpoint, an alert event endpoint, a config file (with its receivers, a team's pager) and a database.
 */
const REAL_DESTINATION = /^HOOKWATCH_(?:FORWARD_|ALERT_OTLP_|CONFIG$|DB$)/;

/**
 * The environment the demo's hookwatch runs on: the shell's, less the settings that reach anything real (a
 * hookwatch of one's own may run from the same shell), which `dropped` names; the rest (addresses, log level) kept.
 */
export function demoEnvironment(env: NodeJS.ProcessEnv): { env: NodeJS.ProcessEnv; dropped: string[] } {
  const dropped = Object.keys(env).filter((name) => REAL_DESTINATION.test(name)).sort();
  return { env: Object.fromEntries(Object.entries(env).filter(([name]) => !REAL_DESTINATION.test(name))), dropped };
}

async function main(): Promise<void> {
  const { crossAfterMs, seconds } = flags(process.argv.slice(2));
  const own = demoEnvironment(process.env);
  if (own.dropped.length) console.log(`hookwatch demo: ignores ${own.dropped.join(', ')} of the environment: simulated telemetry and alerts reach nothing real.`);
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-demo-'));
  const config = toConfig(loadConfig({
    env: {
      // Demo defaults, below whatever the environment says; the database and the forward queue are always fresh
      // temporary ones, never the ./data/ of a hookwatch of one's own run from the same folder.
      HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0',
      HOOKWATCH_ALERT_EVALUATION_INTERVAL: '2s',
      ...own.env,
      HOOKWATCH_DB: join(dir, 'hookwatch.db'),
      HOOKWATCH_FORWARD_QUEUE_PATH: join(dir, 'forward-queue.db'),
      HOOKWATCH_SQLITE_SYNCHRONOUS: 'normal',
    },
  }));
  const logger = createLogger({ level: 'warn' });
  let service: RunningService;
  try {
    service = await startService(config, { logger });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const start = Date.now();
  const plan = fleetPlan(start, { crossAfterMs });
  const clients = Object.fromEntries(Object.entries(plan.clients).map(([k, spec]) => [k, new SimulatedClient(spec, service.otlpHttpUrl)]));
  const random = rng(42);

  // History: BACKFILL_DAYS days of executions at scattered times, sent through the same exporters.
  let backfilled = 0;
  for (let d = BACKFILL_DAYS; d >= 1; d--) {
    for (const c of Object.values(clients)) c.newSession();
    for (const hp of plan.hooks) {
      for (let i = 0; i < hp.perDay; i++) {
        const t = start - d * DAY + Math.floor(random() * DAY);
        clients[hp.client]?.emit({ hookEvent: hp.hookEvent, hookName: hp.hookName, timeMs: t, ...hp.size(t, random()) });
        backfilled++;
      }
    }
  }
  // The last hour too, a few minutes apart: the advertised `?range=1h` view has history to the left of the
  // live traffic, not a single bucket at its right edge.
  for (const c of Object.values(clients)) c.newSession();
  for (const hp of plan.hooks) {
    for (let m = 58; m >= 1; m -= 3) {
      const t = start - m * 60_000 - Math.floor(random() * 60_000);
      clients[hp.client]?.emit({ hookEvent: hp.hookEvent, hookName: hp.hookName, timeMs: t, ...hp.size(t, random()) });
      backfilled++;
    }
  }
  await Promise.all(Object.values(clients).map((c) => c.flush()));

  const hooks = (await (await fetch(`${service.httpUrl}/api/v1/hooks?from=now-30d`)).json()) as HooksResponse;
  const growingId = hooks.hooks.find((h) => h.hookName === 'PostToolUse:Edit')?.id;
  console.log(`hookwatch demo: ${backfilled} executions backfilled over ${BACKFILL_DAYS} days from ${Object.keys(clients).length} simulated clients.`);
  console.log(`  dashboard:   ${service.httpUrl}/`);
  if (growingId) console.log(`  growing hook (crosses the cap in ~${Math.round(crossAfterMs / 1000)} s): ${service.httpUrl}/hooks/${growingId}?range=1h`);
  console.log(`  alerts:      ${service.httpUrl}/alerts`);
  console.log(`  OTLP/HTTP:   ${service.otlpHttpUrl} (point your own Claude Code here too)`);
  console.log(seconds === null ? 'Ctrl-C to stop (the temporary database is removed).' : `Stopping after ${seconds} s.`);

  const tick = (): void => {
    const t = Date.now();
    for (const hp of plan.hooks) {
      // Every hook fires now and then; the growing one every tick so its crossing shows at once.
      if (hp.hookName !== 'PostToolUse:Edit' && random() > 0.4) continue;
      clients[hp.client]?.emit({ hookEvent: hp.hookEvent, hookName: hp.hookName, timeMs: t, ...hp.size(t, random()) });
    }
  };
  tick();
  const timer = setInterval(tick, 2000);

  let stopping = false;
  const stop = async (why: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    clearInterval(timer);
    console.log(`hookwatch demo: stopping (${why}).`);
    await Promise.all(Object.values(clients).map((c) => c.shutdown().catch(() => undefined)));
    await service.stop();
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  if (seconds !== null) setTimeout(() => void stop(`${seconds} s passed`), seconds * 1000).unref();
}

if (startedAsScript(import.meta.url)) {
  main().catch((err: unknown) => {
    console.error(`hookwatch demo: ${(err as Error).message}`);
    process.exit(1);
  });
}
