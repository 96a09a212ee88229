/**
 * Shared by the telemetry tests: a real hookwatch on port 0 with a temp SQLite file, and hook events sent
 * through the real OpenTelemetry SDK and OTLP exporter, shaped as Claude Code 2.1.332 sends them
 * (every number a stringValue).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OTLPLogExporter as GrpcLogExporter } from '@opentelemetry/exporter-logs-otlp-grpc';
import { OTLPLogExporter as JsonLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider, type LogRecordExporter, type ReadableLogRecord } from '@opentelemetry/sdk-logs';
import { SETTINGS, loadConfig, toConfig, type HookwatchConfig } from '../../src/config/index.ts';
import { startService, type RunningService } from '../../src/service.ts';
import type { Logger } from '../../src/telemetry/logger.ts';
import { silentLogger } from '../../src/telemetry/logger.ts';

/** A running service plus its temp directory, removed by close(). */
export interface ServiceUnderTest extends RunningService {
  dir: string;
  close(): Promise<void>;
}

/**
 * Environment that keeps a hookwatch inside `dir` and off fixed ports: every listen address becomes
 * 127.0.0.1:0 and every default file under ./data/ moves into `dir`, whatever settings exist.
 */
export function isolatedEnv(dir: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const s of SETTINGS) {
    if (!s.env) continue;
    if (s.type === 'addr') env[s.env] = '127.0.0.1:0';
    else if (typeof s.default === 'string' && s.default.startsWith('./data/')) env[s.env] = join(dir, s.default.slice('./data/'.length));
  }
  return env;
}

/**
 * Config of an in-process hookwatch whose config file holds `yaml`: SQLite file in `dir`, the OTLP and HTTP
 * listeners on 127.0.0.1:0. For tests that start the service themselves around a webhook sink.
 */
export function configFromYaml(dir: string, yaml: string): HookwatchConfig {
  return toConfig(loadConfig({
    env: {
      HOOKWATCH_CONFIG: 'hookwatch.yaml',
      HOOKWATCH_DB: join(dir, 'h.db'),
      HOOKWATCH_OTLP_HTTP_ADDR: '127.0.0.1:0',
      HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0',
      HOOKWATCH_HTTP_ADDR: '127.0.0.1:0',
    },
    readFile: () => yaml,
  }));
}

/** Starts hookwatch on 127.0.0.1:0 with a fresh SQLite file; `env` uses the HOOKWATCH_* names. */
export async function startServiceUnderTest(env: Record<string, string> = {}, logger: Logger = silentLogger): Promise<ServiceUnderTest> {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-telemetry-'));
  const config = toConfig(loadConfig({
    env: { ...isolatedEnv(dir), ...env },
  }));
  const service = await startService(config, { logger });
  return {
    ...service,
    dir,
    close: async () => {
      await service.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** One hook_execution_complete as the test wants it. */
export interface SyntheticExecution {
  hookEvent: string;
  hookName: string;
  numHooks?: number;
  numSuccess?: number;
  /** Omitted: the event has no size attributes (an old client). */
  additionalContextChars?: number;
  stdoutChars?: number;
  /** null: the sizes without num_outputs_persisted (a client that does not send it). */
  outputsPersisted?: number | null;
}

let sessionCounter = 0;

/** The exporters' CompressionAlgorithm.GZIP (its enum lives in @opentelemetry/otlp-exporter-base, not a dependency). */
const GZIP = 'gzip' as NonNullable<NonNullable<ConstructorParameters<typeof OTLPLogExporter>[0]>['compression']>;

/** Counts what the wrapped exporter reported: 0 for success, 1 for failure (ExportResultCode). */
export class RecordingExporter implements LogRecordExporter {
  readonly codes: number[] = [];
  readonly errors: string[] = [];
  private readonly inner: LogRecordExporter;
  constructor(inner: LogRecordExporter) {
    this.inner = inner;
  }
  export(logs: ReadableLogRecord[], done: Parameters<LogRecordExporter['export']>[1]): void {
    this.inner.export(logs, (result) => {
      this.codes.push(result.code);
      if (result.error) this.errors.push(result.error.message);
      done(result);
    });
  }
  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

/**
 * Sends executions through the OpenTelemetry exporter of `protocol` (http/protobuf or http/json to `${otlpUrl}/v1/logs`, or gRPC
 * to `otlpUrl`, `headers` and `gzip` (compression gzip) over HTTP only) in batches and resolves once the exporter got its answers: what it reported of each export, after
 * its own retries. They happened a second before `atMs` (default: now), a millisecond apart. `timeoutMillis`: the exporter's
 * timeout for each export (default 10 s).
 */
export async function emitExecutions(otlpUrl: string, executions: readonly SyntheticExecution[], headers: Record<string, string> = {}, opts: { atMs?: number; protocol?: 'http/protobuf' | 'http/json' | 'grpc'; gzip?: boolean; timeoutMillis?: number } = {}): Promise<RecordingExporter> {
  const exporter = new RecordingExporter(opts.protocol === 'grpc'
    ? new GrpcLogExporter({ url: otlpUrl, timeoutMillis: opts.timeoutMillis ?? 10_000 })
    : new (opts.protocol === 'http/json' ? JsonLogExporter : OTLPLogExporter)({ url: `${otlpUrl}/v1/logs`, headers, timeoutMillis: opts.timeoutMillis ?? 10_000, ...(opts.gzip ? { compression: GZIP } : {}) }));
  const provider = new LoggerProvider({
    resource: resourceFromAttributes({ 'service.name': 'claude-code', 'service.version': '2.1.332' }),
    // One batch per call, as Claude Code's exporter sends them (every 5 s, up to 512 records).
    processors: [new BatchLogRecordProcessor({ exporter, maxQueueSize: 4096, maxExportBatchSize: 512, scheduledDelayMillis: 60_000 })],
  });
  const logger = provider.getLogger('com.anthropic.claude_code.events', '2.1.332');
  const session = `telemetry-test-${process.pid}-${++sessionCounter}`;
  const now = opts.atMs ?? Date.now();
  executions.forEach((x, i) => {
    const attributes: Record<string, string> = {
      'event.name': 'hook_execution_complete',
      'event.timestamp': new Date(now - 1000 + i).toISOString(),
      'event.sequence': String(i),
      'session.id': session,
      hook_event: x.hookEvent,
      hook_name: x.hookName,
      num_hooks: String(x.numHooks ?? 1),
      num_success: String(x.numSuccess ?? x.numHooks ?? 1),
      num_blocking: '0',
      num_non_blocking_error: '0',
      num_cancelled: '0',
      total_duration_ms: '12',
    };
    if (x.additionalContextChars !== undefined || x.stdoutChars !== undefined || x.outputsPersisted !== undefined) {
      attributes['stdout_chars'] = String(x.stdoutChars ?? 0);
      attributes['additional_context_chars'] = String(x.additionalContextChars ?? 0);
      attributes['system_message_chars'] = '0';
      attributes['initial_user_message_chars'] = '0';
      if (x.outputsPersisted !== null) attributes['num_outputs_persisted'] = String(x.outputsPersisted ?? 0);
    }
    logger.emit({ body: 'claude_code.hook_execution_complete', attributes, timestamp: new Date(now - 1000 + i) });
  });
  await provider.forceFlush();
  await provider.shutdown();
  return exporter;
}
