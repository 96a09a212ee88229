/**
 * The real OpenTelemetry JS exporters (OTLP/HTTP JSON and protobuf, gzip on and off) as clients, emitting
 * records shaped like Claude Code 2.1.332's: string values, its scope and body.
 */
import { OTLPLogExporter as JsonExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPLogExporter as ProtoExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider } from '@opentelemetry/sdk-logs';
import { afterEach, describe, expect, it } from 'vitest';
import type { HooksResponse } from '../../shared/src/api.ts';
import { getJson, startTestService, type TestService } from './helpers.ts';

let service: TestService | undefined;
afterEach(async () => {
  await service?.close();
  service = undefined;
});

interface Emit {
  hookName: string;
  attrs: Record<string, string>;
}

async function emit(kind: 'json' | 'protobuf', gzip: boolean, records: Emit[], headers: Record<string, string> = {}): Promise<void> {
  const opts = { url: `${service!.otlpHttpUrl}/v1/logs`, headers, ...(gzip ? { compression: 'gzip' as never } : {}) };
  const exporter = kind === 'json' ? new JsonExporter(opts) : new ProtoExporter(opts);
  const provider = new LoggerProvider({
    resource: resourceFromAttributes({ 'service.name': 'claude-code', 'service.version': '2.1.332', 'host.arch': 'x64', 'os.type': 'linux', team: 'platform' }),
    processors: [new BatchLogRecordProcessor({ exporter })],
  });
  const logger = provider.getLogger('com.anthropic.claude_code.events', '2.1.332');
  records.forEach((r, i) => {
    logger.emit({
      body: 'claude_code.hook_execution_complete',
      attributes: {
        'event.name': 'hook_execution_complete',
        'event.timestamp': new Date().toISOString(),
        'event.sequence': i,
        'session.id': `session-${kind}-${gzip}`,
        'user.id': 'user-1',
        'terminal.type': 'non-interactive',
        team: 'platform',
        hook_event: r.hookName.split(':')[0],
        hook_name: r.hookName,
        managed_only: 'false',
        hook_source: 'merged',
        ...r.attrs,
      },
    });
    // A non-hook event in the same batch, as Claude Code mixes event types.
    logger.emit({ body: 'claude_code.user_prompt', attributes: { 'event.name': 'user_prompt', prompt_length: '12' } });
  });
  await provider.forceFlush();
  await provider.shutdown();
}

const sized = (numHooks: number, persisted: number, ac: number, stdout: number): Record<string, string> => ({
  num_hooks: String(numHooks),
  num_success: String(numHooks),
  num_blocking: '0',
  num_non_blocking_error: '0',
  num_cancelled: '0',
  total_duration_ms: '42',
  num_outputs_persisted: String(persisted),
  additional_context_chars: String(ac),
  stdout_chars: String(stdout),
  system_message_chars: '0',
  initial_user_message_chars: '0',
});

describe('real OpenTelemetry exporters as clients', () => {
  for (const kind of ['json', 'protobuf'] as const) {
    for (const gzip of [false, true]) {
      it(`exporter-logs-otlp-${kind === 'json' ? 'http' : 'proto'}${gzip ? ' with gzip' : ''}`, async () => {
        service = await startTestService({ HOOKWATCH_INGEST_TOKEN: 'tok-1234567890abcd' });
        await emit(kind, gzip, [
          { hookName: 'SessionStart:startup', attrs: sized(2, 1, 12000, 12578) },
          { hookName: 'SessionStart:startup', attrs: sized(2, 0, 9000, 9100) },
          { hookName: 'UserPromptSubmit', attrs: sized(1, 0, 0, 100) },
          // A client older than 2.1.280: no size attributes at all.
          { hookName: 'Stop', attrs: { num_hooks: '1', num_success: '1' } },
        ], { Authorization: 'Bearer tok-1234567890abcd' });
        const { body } = await getJson<HooksResponse>(service.httpUrl, '/api/v1/hooks?from=now-1h&to=now%2B1h');
        const by = new Map(body.hooks.map((h) => [h.hookName, h]));
        expect(by.get('SessionStart:startup')).toMatchObject({ executions: 2, outputsPersisted: 1, status: 'over', maxChars: { additionalContext: 12000, stdout: 12578 } });
        expect(by.get('UserPromptSubmit')).toMatchObject({ executions: 1, status: 'ok', headroom: 9900 });
        // Unknown is not zero: no size data means unknown, never healthy.
        expect(by.get('Stop')).toMatchObject({ executions: 1, sizeUnknownExecutions: 1, status: 'unknown', maxChars: { stdout: null, additionalContext: null } });
        expect(service.ingest.stats.otherRecords).toBe(4);
        // Filter by an extra dimension copied from OTEL_RESOURCE_ATTRIBUTES.
        const team = await getJson<HooksResponse>(service.httpUrl, '/api/v1/hooks?from=now-1h&to=now%2B1h&team=platform');
        expect(team.body.hooks.length).toBe(3);
        const other = await getJson<HooksResponse>(service.httpUrl, '/api/v1/hooks?from=now-1h&to=now%2B1h&team=other');
        expect(other.body.hooks.length).toBe(0);
      });
    }
  }

  it('an exporter without the token is refused and stores nothing', async () => {
    service = await startTestService({ HOOKWATCH_INGEST_TOKEN: 'tok-1234567890abcd' });
    await emit('protobuf', false, [{ hookName: 'Stop', attrs: sized(1, 0, 0, 5) }]);
    const { body } = await getJson<HooksResponse>(service.httpUrl, '/api/v1/hooks?from=now-1h&to=now%2B1h');
    expect(body.hooks).toEqual([]);
  });
});
