/**
 * Runs hookwatch's service in a child process of the benchmark, configured like `hookwatch serve` (HOOKWATCH_*
 * environment), and answers the parent over IPC with its own CPU time, RSS and event-loop delay, so the
 * figures are the server's alone and not the load generator's. With BENCH_SERVER=null it runs a bare HTTP
 * server instead, the baseline the load benchmark compares with.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { configSecrets, loadConfig, toConfig } from '../../collector/src/config/index.ts';
import { startService } from '../../collector/src/service.ts';
import { createLogger } from '../../collector/src/telemetry/logger.ts';

/** What the child reports when asked for `stats`. */
export interface ServerStats {
  cpuUserMicros: number;
  cpuSystemMicros: number;
  rssBytes: number;
  heapUsedBytes: number;
  /** Event-loop delay since the last reset, in milliseconds. */
  loopDelayP50Ms: number;
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
  stored: number;
  batches: number;
  storeErrors: number;
  /**
   * Transactions the store's group commit made for ingest (SqliteStore.commits; 0 for the bare server and for a
   * store that does not count them): batches per commit is what the breakdown's in-process store part commits as.
   */
  commits: number;
  /** Alert evaluations done (hookwatch_alert_evaluations_total; 0 for the bare server). */
  alertEvaluations: number;
}

/** Messages from the child. */
export type ChildMessage = { type: 'ready'; otlpHttpUrl: string; httpUrl: string; pid: number } | { type: 'stats'; stats: ServerStats } | { type: 'error'; message: string };

interface Running {
  otlpHttpUrl: string;
  httpUrl: string;
  stop(): Promise<void>;
  stats(): { stored: number; batches: number; storeErrors: number; commits: number; alertEvaluations: number };
}

/** The same-run baseline: a bare node:http server that reads each body and answers 200, nothing else. */
async function nullServer(): Promise<Running> {
  let batches = 0;
  const server = createServer((req, res) => {
    req.on('data', () => {});
    req.on('end', () => {
      batches++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': 0 });
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    otlpHttpUrl: url,
    httpUrl: url,
    stop: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
    stats: () => ({ stored: 0, batches, storeErrors: 0, commits: 0, alertEvaluations: 0 }),
  };
}

async function hookwatch(): Promise<Running> {
  const config = toConfig(loadConfig({ flags: {} }));
  const logger = createLogger({ level: 'warn', secrets: configSecrets(config) });
  const service = await startService(config, { logger });
  return { otlpHttpUrl: service.otlpHttpUrl, httpUrl: service.httpUrl, stop: async () => {
    await service.stop();
  }, stats: () => ({ ...service.ingest.stats, commits: (service.store as { commits?: number }).commits ?? 0, alertEvaluations: service.alerting.engine.stats.evaluations }) };
}

async function main(): Promise<void> {
  const service = process.env['BENCH_SERVER'] === 'null' ? await nullServer() : await hookwatch();
  const eld = monitorEventLoopDelay({ resolution: 10 });
  eld.enable();
  const send = (m: ChildMessage): void => {
    process.send?.(m);
  };
  process.on('message', (m: { type: string }) => {
    if (m.type === 'stats') {
      const cpu = process.cpuUsage();
      const mem = process.memoryUsage();
      const s = service.stats();
      send({
        type: 'stats',
        stats: {
          cpuUserMicros: cpu.user, cpuSystemMicros: cpu.system, rssBytes: mem.rss, heapUsedBytes: mem.heapUsed,
          loopDelayP50Ms: eld.percentile(50) / 1e6, loopDelayP99Ms: eld.percentile(99) / 1e6, loopDelayMaxMs: eld.max / 1e6,
          stored: s.stored, batches: s.batches, storeErrors: s.storeErrors, commits: s.commits, alertEvaluations: s.alertEvaluations,
        },
      });
    } else if (m.type === 'reset') {
      eld.reset();
    } else if (m.type === 'stop') {
      void service.stop().finally(() => process.exit(0));
    }
  });
  // The parent going away (a crashed bench) must not leave a server behind.
  process.on('disconnect', () => void service.stop().finally(() => process.exit(0)));
  send({ type: 'ready', otlpHttpUrl: service.otlpHttpUrl, httpUrl: service.httpUrl, pid: process.pid });
}

main().catch((err: unknown) => {
  process.send?.({ type: 'error', message: (err as Error).message });
  process.exit(1);
});
