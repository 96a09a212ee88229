/**
 * A simulated Claude Code fleet for the demo: each client is a real OpenTelemetry LoggerProvider exporting over
 * OTLP/HTTP JSON, with records shaped exactly like Claude Code 2.1.332's: resource (service.name, service.version,
 * host and OS, OTEL_RESOURCE_ATTRIBUTES keys), scope com.anthropic.claude_code.events at the client version, body
 * claude_code.hook_execution_start / _complete, and every hook attribute as a string.
 */
import { randomUUID } from 'node:crypto';
import type { Attributes as AnyValueMap, Logger } from '@opentelemetry/api';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider } from '@opentelemetry/sdk-logs';
import { OUTPUT_CAP_CHARS } from '../../shared/src/cliff.ts';

/** First client version with the size attributes; older clients send none. */
const SIZES_SINCE = [2, 1, 280];

function hasSizes(version: string): boolean {
  const v = version.split('.').map(Number);
  for (let i = 0; i < 3; i++) {
    if ((v[i] ?? 0) !== SIZES_SINCE[i]) return (v[i] ?? 0) > (SIZES_SINCE[i] ?? 0);
  }
  return true;
}

export interface ClientSpec {
  userId: string;
  team: string;
  version: string;
}

/** One hook firing: the strings it returned (sums over its commands, as Claude Code reports them). */
export interface Execution {
  hookEvent: string;
  hookName: string;
  timeMs: number;
  numHooks?: number;
  additionalContext?: number;
  stdout: number;
  systemMessage?: number;
  durationMs?: number;
}

/** A simulated Claude Code process (one user, one client version, one session at a time). */
export class SimulatedClient {
  readonly spec: ClientSpec;
  private readonly provider: LoggerProvider;
  private readonly logger: Logger;
  private sequence = 0;
  private session = randomUUID();

  constructor(spec: ClientSpec, otlpHttpUrl: string) {
    this.spec = spec;
    this.provider = new LoggerProvider({
      resource: resourceFromAttributes({
        'host.arch': 'amd64', 'os.type': 'linux', 'os.version': '6.8.0', 'service.name': 'claude-code', 'service.version': spec.version, team: spec.team,
      }),
      processors: [new BatchLogRecordProcessor({
        exporter: new OTLPLogExporter({ url: `${otlpHttpUrl}/v1/logs`, headers: {} }),
        // Claude Code's OTEL_LOGS_EXPORT_INTERVAL default is 5 s; the demo flushes faster so the dashboard moves.
        scheduledDelayMillis: 1000,
        maxExportBatchSize: 512,
        maxQueueSize: 20_000,
      })],
    });
    this.logger = this.provider.getLogger('com.anthropic.claude_code.events', spec.version);
  }

  /** Starts a new session (Claude Code numbers events per process from 0). */
  newSession(): void {
    this.session = randomUUID();
    this.sequence = 0;
  }

  private common(event: string, timeMs: number): AnyValueMap {
    return {
      'user.id': this.spec.userId,
      'session.id': this.session,
      'anthropic.provider': 'firstParty',
      'anthropic.custom_base_url': false,
      'terminal.type': 'xterm-256color',
      'event.name': event,
      'event.timestamp': new Date(timeMs).toISOString(),
      'event.sequence': this.sequence++,
      // OTEL_RESOURCE_ATTRIBUTES keys are copied onto every event too.
      team: this.spec.team,
    };
  }

  /** Emits hook_execution_start and hook_execution_complete for one firing. */
  emit(e: Execution): void {
    const n = e.numHooks ?? 1;
    const start = e.timeMs - (e.durationMs ?? 40);
    this.logger.emit({
      timestamp: new Date(start), observedTimestamp: new Date(start), body: 'claude_code.hook_execution_start',
      attributes: { ...this.common('hook_execution_start', start), hook_event: e.hookEvent, hook_name: e.hookName, num_hooks: String(n), managed_only: 'false', hook_source: 'merged', safe_mode: 'false' },
    });
    const ctx = e.additionalContext ?? 0;
    const sys = e.systemMessage ?? 0;
    const persisted = [ctx, sys, e.stdout - ctx].filter((x) => x > OUTPUT_CAP_CHARS).length;
    const sizes: AnyValueMap = hasSizes(this.spec.version) ? {
      stdout_chars: String(e.stdout), additional_context_chars: String(ctx), system_message_chars: String(sys),
      initial_user_message_chars: '0', num_outputs_persisted: String(persisted),
    } : {};
    this.logger.emit({
      timestamp: new Date(e.timeMs), observedTimestamp: new Date(e.timeMs), body: 'claude_code.hook_execution_complete',
      attributes: {
        ...this.common('hook_execution_complete', e.timeMs),
        hook_event: e.hookEvent, hook_name: e.hookName, num_hooks: String(n), num_success: String(n), num_blocking: '0',
        num_non_blocking_error: '0', num_cancelled: '0', total_duration_ms: String(e.durationMs ?? 40), ...sizes,
        managed_only: 'false', hook_source: 'merged', safe_mode: 'false',
      },
    });
  }

  flush(): Promise<void> {
    return this.provider.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.provider.shutdown();
  }
}
