/**
 * The OTLP/HTTP exporter against real HTTP servers on loopback: how much of an answer it reads.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { loadConfig, toConfig } from '../config/index.ts';
import { isolatedEnv } from '../../test/support/service.ts';
import { tempDir } from '../../test/helpers.ts';
import { encodeExportResponse, encodeStatus } from '../otlp/encode.ts';
import { HttpExporter, MAX_RESPONSE_BYTES } from './exporter-http.ts';

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
});

async function listen(server: Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A destination that answers `status` with a body of `total` bytes, counting the bytes it got out before the client hung up. */
async function floodingDestination(status: number, total: number): Promise<{ url: string; sent: () => number; closed: Promise<void> }> {
  let sent = 0;
  let resolveClosed!: () => void;
  const closed = new Promise<void>((resolve) => (resolveClosed = resolve));
  const chunk = Buffer.alloc(1024 * 1024, 0x41);
  const url = await listen(createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(status, { 'content-type': 'application/json' });
      const pump = (): void => {
        while (sent < total && !res.destroyed) {
          sent += chunk.length;
          if (!res.write(chunk)) return;
        }
        if (sent >= total) res.end();
      };
      res.on('drain', pump);
      res.on('close', resolveClosed);
      pump();
    });
  }));
  return { url, sent: () => sent, closed };
}

for (const status of [200, 503]) {
  it(`reads at most ${MAX_RESPONSE_BYTES} bytes of a ${status} answer, however large its body`, async () => {
    const total = 512 * 1024 * 1024;
    const destination = await floodingDestination(status, total);
    const exporter = new HttpExporter({ endpoint: destination.url, protocol: 'http/json', headers: {}, compression: 'none', timeoutMs: 20_000 });
    const result = await exporter.export({ signal: 'logs', encoding: 'json', body: Buffer.from('{}') });
    expect(result.kind).toBe(status === 200 ? 'success' : 'retryable');
    if (result.kind === 'retryable') expect(result.message.length).toBeLessThan(1000);
    // The connection is given up once the start is read, instead of the whole body being buffered.
    await destination.closed;
    expect(destination.sent()).toBeLessThan(64 * 1024 * 1024);
  });
}

it('appends the signal path to the endpoint\'s path and keeps its query (an API key passed in the URL)', async () => {
  const seen: string[] = [];
  const url = await listen(createServer((req, res) => {
    seen.push(req.url ?? '');
    req.resume();
    req.on('end', () => res.end());
  }));
  const exporter = new HttpExporter({ endpoint: `${url}/otlp/?api-key=k3y-0123&region=eu`, protocol: 'http/protobuf', headers: {}, compression: 'none', timeoutMs: 5_000 });
  for (const signal of ['logs', 'metrics', 'traces'] as const) {
    expect((await exporter.export({ signal, encoding: 'protobuf', body: Buffer.alloc(0) })).kind).toBe('success');
  }
  expect(seen).toEqual(['/otlp/v1/logs?api-key=k3y-0123&region=eu', '/otlp/v1/metrics?api-key=k3y-0123&region=eu', '/otlp/v1/traces?api-key=k3y-0123&region=eu']);
  // The key stays out of what is logged and shown.
  expect(exporter.description).not.toContain('k3y');
});

for (const status of [301, 302, 303, 307, 308]) {
  it(`does not follow a ${status} redirect: the request is not delivered, and the message says so`, async () => {
    const seen: string[] = [];
    const url = await listen(createServer((req, res) => {
      seen.push(`${req.method ?? ''} ${req.url ?? ''}`);
      req.resume();
      req.on('end', () => {
        // A login page: anything but the OTLP path answers 200.
        if (req.url?.startsWith('/v1/')) res.writeHead(status, { location: '/login?session=s3cr3t' }).end();
        else res.writeHead(200, { 'content-type': 'text/html' }).end('<html>sign in</html>');
      });
    }));
    const exporter = new HttpExporter({ endpoint: url, protocol: 'http/protobuf', headers: { 'x-api-key': 'k3y-0123' }, compression: 'none', timeoutMs: 5_000 });
    const result = await exporter.export({ signal: 'logs', encoding: 'protobuf', body: Buffer.from([0x0a, 0x00]) });
    expect(result).toMatchObject({ kind: 'retryable', status, bounded: true });
    expect((result as { message: string }).message).toBe(`${url} (http/protobuf) answered ${status}, a redirect to ${url}/login; redirects are not followed (the request is not delivered): set forward.endpoint to where the destination is now`);
    expect(seen).toEqual(['POST /v1/logs']);
  });
}

it('keeps the authorization header it sends out of a refusal that repeats it, when the endpoint has credentials too', async () => {
  const received: string[] = [];
  const url = await listen(createServer((req, res) => {
    received.push(req.headers.authorization ?? '');
    req.resume();
    req.on('end', () => res.writeHead(401, { 'content-type': 'text/plain' }).end(`credential ${req.headers.authorization ?? ''} not accepted`));
  }));
  const token = 'fwd-bearer-token-3c2d1e';
  const exporter = new HttpExporter({ endpoint: url.replace('http://', 'http://user:endpoint-pass-5a4b@'), protocol: 'http/json', headers: { authorization: `Bearer ${token}` }, compression: 'none', timeoutMs: 5_000 });
  const result = await exporter.export({ signal: 'logs', encoding: 'json', body: Buffer.from('{}') });
  // forward.headers comes after the endpoint's credentials: its authorization is the one sent.
  expect(received).toEqual([`Bearer ${token}`]);
  expect(result).toMatchObject({ kind: 'retryable', status: 401 });
  const message = (result as { message: string }).message;
  expect(message).toContain('credential <redacted> not accepted');
  expect(message).not.toContain(token);
});

for (const [answer, contentType, body] of [
  ['a google.rpc.Status in protobuf, as the specification has it', 'application/x-protobuf', encodeStatus('protobuf', 3, 'log record 2 has a time in the future')],
  ['plain text, as a gateway writes it', 'text/plain; charset=utf-8', Buffer.from('log record 2 has a time in the future')],
] as const) {
  it(`names the reason a destination gives for refusing a protobuf request in ${answer}`, async () => {
    const url = await listen(createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(400, { 'content-type': contentType }).end(body));
    }));
    const exporter = new HttpExporter({ endpoint: url, protocol: 'http/protobuf', headers: {}, compression: 'none', timeoutMs: 5_000 });
    const result = await exporter.export({ signal: 'logs', encoding: 'protobuf', body: Buffer.from([0x0a, 0x00]) });
    // The reason is what a dead letter, the log and the dashboard show; without it the operator has "400" only.
    expect(result).toEqual({ kind: 'permanent', status: 400, message: `${url} (http/protobuf) answered 400: log record 2 has a time in the future` });
  });
}

it('names the reason of a google.rpc.Status refusal over the 64 KiB it reads, from the start of its message, scrubbed', async () => {
  const key = 'fwd-api-key-9e8d7c6b';
  // A validation error listing every bad record: the message alone is over 64 KiB.
  const reason = `log record 2 has a time in the future (sent with ${key}); ${'record 7 too; '.repeat(10_000)}`;
  const body = encodeStatus('protobuf', 3, reason);
  expect(body.length).toBeGreaterThan(2 * MAX_RESPONSE_BYTES);
  const url = await listen(createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(400, { 'content-type': 'application/x-protobuf' }).end(body));
  }));
  const exporter = new HttpExporter({ endpoint: url, protocol: 'http/protobuf', headers: { 'x-api-key': key }, compression: 'none', timeoutMs: 5_000 });
  const result = await exporter.export({ signal: 'logs', encoding: 'protobuf', body: Buffer.from([0x0a, 0x00]) });
  expect(result).toMatchObject({ kind: 'permanent', status: 400 });
  const message = (result as { message: string }).message;
  expect(message).toMatch(new RegExp(`^${url.replace(/\./g, '\\.')} \\(http/protobuf\\) answered 400: log record 2 has a time in the future \\(sent with <redacted>\\); record 7 too; `));
  expect(message).not.toContain(key);
  expect(message.length).toBeLessThan(400);
});

it('shows no part of a key that the 64 KiB read cuts through in a google.rpc.Status refusal', async () => {
  const key = 'fwd-api-key-9e8d7c6b';
  // Details (field 3) first, so the message starts 100 bytes before the cut, and the key runs across it.
  const detailsLength = MAX_RESPONSE_BYTES - 2 - 4 - 3 - 100;
  const details = Buffer.concat([Buffer.from([0x1a, 0x80 | (detailsLength & 0x7f), 0x80 | ((detailsLength >> 7) & 0x7f), detailsLength >> 14]), Buffer.alloc(detailsLength, 0x61)]);
  const reason = `${'r'.repeat(80)} sent with ${key}, refused; ${'more '.repeat(100)}`;
  const body = Buffer.concat([Buffer.from([0x08, 0x03]), details, Buffer.from([0x12, 0x80 | (Buffer.byteLength(reason) & 0x7f), Buffer.byteLength(reason) >> 7]), Buffer.from(reason)]);
  const url = await listen(createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(400, { 'content-type': 'application/x-protobuf' }).end(body));
  }));
  const exporter = new HttpExporter({ endpoint: url, protocol: 'http/protobuf', headers: { 'x-api-key': key }, compression: 'none', timeoutMs: 5_000 });
  const result = await exporter.export({ signal: 'logs', encoding: 'protobuf', body: Buffer.from([0x0a, 0x00]) });
  expect(result).toEqual({ kind: 'permanent', status: 400, message: `${url} (http/protobuf) answered 400: ${'r'.repeat(80)} sent with …` });
});

it('says a google.rpc.Status refusal\'s reason was not read when none is in the 64 KiB it reads, with the answer\'s size', async () => {
  // Details (field 3) of 100 KiB written before the message: the part read holds no message.
  const details = Buffer.concat([Buffer.from([0x1a, 0x80, 0xa0, 0x06]), Buffer.alloc(100 * 1024, 0x61)]);
  const body = Buffer.concat([Buffer.from([0x08, 0x03]), details, Buffer.from([0x12, 0x04]), Buffer.from('late')]);
  const url = await listen(createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(400, { 'content-type': 'application/x-protobuf', 'content-length': body.length }).end(body));
  }));
  const exporter = new HttpExporter({ endpoint: url, protocol: 'http/protobuf', headers: {}, compression: 'none', timeoutMs: 5_000 });
  const result = await exporter.export({ signal: 'logs', encoding: 'protobuf', body: Buffer.from([0x0a, 0x00]) });
  expect(result).toEqual({ kind: 'permanent', status: 400, message: `${url} (http/protobuf) answered 400: reason not read: the answer is over the 64 KiB read (${body.length} bytes)` });
});

for (const [answer, contentType, body, partial] of [
  ['in OTLP/JSON, as its content type says', 'application/json; charset=utf-8', encodeExportResponse('json', 2, 'quota'), { rejected: 2, message: 'quota' }],
  ['in protobuf, as its content type says', 'application/x-protobuf', encodeExportResponse('protobuf', 2, 'quota'), { rejected: 2, message: 'quota' }],
  ['in protobuf without a content type', undefined, encodeExportResponse('protobuf', 2, 'quota'), undefined],
  ['in OTLP/JSON without a content type', undefined, encodeExportResponse('json', 2, 'quota'), undefined],
  ['in protobuf as text/plain', 'text/plain', encodeExportResponse('protobuf', 2, 'quota'), undefined],
] as const) {
  it(`reads a partial success to a protobuf request by the answer's own content type: ${answer}`, async () => {
    // As the OpenTelemetry Collector's otlphttp exporter does: an answer that names no OTLP encoding is not read,
    // however it would decode.
    const url = await listen(createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, contentType ? { 'content-type': contentType } : {}).end(body));
    }));
    const exporter = new HttpExporter({ endpoint: url, protocol: 'http/protobuf', headers: {}, compression: 'none', timeoutMs: 5_000 });
    const result = await exporter.export({ signal: 'logs', encoding: 'protobuf', body: Buffer.from([0x0a, 0x00]) });
    expect(result).toEqual(partial ? { kind: 'success', partial } : { kind: 'success' });
  });
}

it('is refused an endpoint on a port fetch never connects to (a bad port) when the config loads, naming the port and not the url', async () => {
  // Every attempt to such a port fails before it is made: forwarded requests would wait in the queue for ever.
  const exporter = new HttpExporter({ endpoint: 'http://127.0.0.1:6000', protocol: 'http/protobuf', headers: {}, compression: 'none', timeoutMs: 5_000 });
  expect(await exporter.export({ signal: 'logs', encoding: 'protobuf', body: Buffer.alloc(0) })).toMatchObject({ kind: 'retryable', message: expect.stringContaining('bad port') as string });
  const dir = tempDir('hookwatch-forward-port-');
  try {
    // A start and a reload both load the configuration this way.
    const config = (env: Record<string, string>): ReturnType<typeof toConfig> => toConfig(loadConfig({ env: { ...isolatedEnv(dir.dir), ...env } }));
    const secretUrl = 'https://user:endpoint-pass-5a4b@otlp.example.test:6666/otlp?api-key=k3y-0123';
    expect(() => config({ HOOKWATCH_FORWARD_ENDPOINT: secretUrl })).toThrow(/^invalid value for forward\.endpoint \(forward\.protocol http\/protobuf\): port 6666 is one fetch never connects to/);
    expect(() => config({ HOOKWATCH_FORWARD_ENDPOINT: secretUrl, HOOKWATCH_FORWARD_PROTOCOL: 'http/json' })).toThrow(expect.objectContaining({ message: expect.not.stringMatching(/endpoint-pass|k3y|otlp\.example/) }));
    expect(() => config({ HOOKWATCH_FORWARD_ENDPOINT: 'http://collector:10080' })).toThrow(/port 10080/);
    expect(config({ HOOKWATCH_FORWARD_ENDPOINT: 'http://collector:4318' }).forward.endpoint).toBe('http://collector:4318');
    // A scheme's default port is not written in the URL: never refused.
    expect(config({ HOOKWATCH_FORWARD_ENDPOINT: 'https://collector:443' }).forward.endpoint).toBe('https://collector:443');
    // gRPC does not go through fetch: its connections reach any port.
    expect(config({ HOOKWATCH_FORWARD_ENDPOINT: 'http://collector:6000', HOOKWATCH_FORWARD_PROTOCOL: 'grpc' }).forward.endpoint).toBe('http://collector:6000');
    expect(config({ HOOKWATCH_FORWARD_ENDPOINT: 'collector:6000', HOOKWATCH_FORWARD_PROTOCOL: 'grpc' }).forward.endpoint).toBe('collector:6000');
  } finally {
    dir.cleanup();
  }
});
