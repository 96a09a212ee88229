/** Shared by the forwarding fault tests: a hookwatch forwarding to a recording downstream, a real span exporter, polling. */
import type { Attributes } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { TracerProvider, type ReadableSpan, type SpanProcessor } from '@opentelemetry/sdk-trace';
import type { ForwardingResponse } from '../../../shared/src/api.ts';
import { HttpDownstream } from '../support/downstream-recorder.ts';
import { startTestService, tempDir, type TestService } from '../helpers.ts';

export interface ForwardRig {
  hw: TestService;
  downstream: HttpDownstream;
  close(): Promise<void>;
}

/**
 * A downstream on port 0 and a hookwatch forwarding to it (protobuf over HTTP, uncompressed, fast retries);
 * `endpoint` writes forward.endpoint from the downstream's URL (a key in its query, say).
 */
export async function startForwardRig(env: Record<string, string> = {}, opts: { now?: () => number; dir?: string; endpoint?: (url: string) => string } = {}): Promise<ForwardRig> {
  const downstream = new HttpDownstream();
  const url = await downstream.start();
  const hw = await startTestService({
    HOOKWATCH_FORWARD_ENDPOINT: opts.endpoint ? opts.endpoint(url) : url,
    HOOKWATCH_FORWARD_COMPRESSION: 'none',
    HOOKWATCH_FORWARD_RETRY_INITIAL_INTERVAL: '10ms',
    HOOKWATCH_FORWARD_RETRY_MAX_INTERVAL: '50ms',
    ...env,
  }, { dir: opts.dir ?? tempDir('hookwatch-fwd-').dir, ...(opts.now ? { now: opts.now } : {}) });
  return {
    hw,
    downstream,
    close: async () => {
      await hw.close();
      await downstream.stop();
    },
  };
}

export { until } from '../helpers.ts';

export async function forwardingStatus(httpUrl: string): Promise<ForwardingResponse> {
  return (await fetch(`${httpUrl}/api/v1/forwarding`)).json() as Promise<ForwardingResponse>;
}

/**
 * The span names in an ExportTraceServiceRequest as a protobuf parser that skips unknown groups reads them
 * (the Go runtime the OpenTelemetry Collector uses does): what a real downstream would store.
 */
export function spanNames(body: Buffer): string[] {
  const names: string[] = [];
  const fields = (buf: Buffer, start: number, end: number, visit: (field: number, value: Buffer) => void): void => {
    let pos = start;
    const varint = (): number => {
      let v = 0;
      let mul = 1;
      for (;;) {
        const b = buf[pos++]!;
        v += (b & 0x7f) * mul;
        if (!(b & 0x80)) return v;
        mul *= 128;
      }
    };
    let groupDepth = 0;
    while (pos < end) {
      const tag = varint();
      const wt = tag & 7;
      if (wt === 3) groupDepth++;
      else if (wt === 4) groupDepth = Math.max(0, groupDepth - 1);
      else if (wt === 0) varint();
      else if (wt === 1) pos += 8;
      else if (wt === 5) pos += 4;
      else if (wt === 2) {
        const len = varint();
        if (groupDepth === 0) visit(tag >>> 3, buf.subarray(pos, pos + len));
        pos += len;
      }
    }
  };
  fields(body, 0, body.length, (f, rs) => {
    if (f !== 1) return;
    fields(rs, 0, rs.length, (f2, ss) => {
      if (f2 !== 2) return;
      fields(ss, 0, ss.length, (f3, span) => {
        if (f3 !== 2) return;
        fields(span, 0, span.length, (f4, name) => {
          if (f4 === 5) names.push(name.toString('utf8'));
        });
      });
    });
  });
  return names;
}

/**
 * Sends one span per request through the real OTLP/HTTP protobuf exporter, `concurrency` requests at a time;
 * resolves with the names of the spans hookwatch acknowledged.
 */
export async function sendSpans(otlpHttpUrl: string, names: readonly string[], opts: { concurrency?: number; attributes?: Attributes } = {}): Promise<string[]> {
  const ended: ReadableSpan[] = [];
  const capture: SpanProcessor = { onStart: () => {}, onEnd: (s) => void ended.push(s), forceFlush: async () => {}, shutdown: async () => {} };
  const provider = new TracerProvider({ resource: resourceFromAttributes({ 'service.name': 'claude-code' }), spanProcessors: [capture] });
  const tracer = provider.getTracer('claude_code');
  const exporter = new OTLPTraceExporter({ url: `${otlpHttpUrl}/v1/traces`, timeoutMillis: 20_000 });
  const acked: string[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: opts.concurrency ?? 8 }, async () => {
    while (next < names.length) {
      const name = names[next++]!;
      tracer.startSpan(name, opts.attributes ? { attributes: opts.attributes } : {}).end();
      const span = ended.pop()!;
      if (await new Promise<boolean>((resolve) => exporter.export([span], (r) => resolve(r.code === 0)))) acked.push(name);
    }
  }));
  await exporter.shutdown();
  await provider.shutdown();
  return acked;
}
