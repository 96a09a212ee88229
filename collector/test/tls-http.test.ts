/**
 * TLS on the HTTP port (http.tls.*): the API, the dashboard, /metrics and the probes over https, the
 * DNS-rebinding check unchanged behind it, mutual TLS, a rotated certificate taken without a restart, and a start
 * refused on files that cannot be used.
 */
import { X509Certificate } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { HooksResponse } from '../../shared/src/api.ts';
import { HAVE_OPENSSL, pemBody, useTestPki, type CertFiles } from './support/certs.ts';
import { emitExecutions, startServiceUnderTest, type ServiceUnderTest } from './support/service.ts';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** SHA-256 fingerprint of the certificate the server showed. */
  served: string;
}

/** One request over https with the given CA (and client certificate), on a fresh connection. */
function get(url: string, opts: { ca?: string; cert?: CertFiles; headers?: Record<string, string>; method?: string; body?: string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: opts.method ?? 'GET',
      agent: false,
      // A Host header of another name must not change which name the certificate is checked against.
      servername: 'localhost',
      headers: opts.headers ?? {},
      ...(opts.ca ? { ca: readFileSync(opts.ca) } : { rejectUnauthorized: false }),
      ...(opts.cert ? { cert: readFileSync(opts.cert.certFile), key: readFileSync(opts.cert.keyFile) } : {}),
    }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body, served: (res.socket as unknown as { getPeerCertificate(): { fingerprint256: string } }).getPeerCertificate().fingerprint256 }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

const fingerprint = (file: string): string => new X509Certificate(readFileSync(file)).fingerprint256;

describe.skipIf(!HAVE_OPENSSL)('the HTTP port over TLS', () => {
  const pki = useTestPki('hookwatch-tls-http-');

  let service: ServiceUnderTest | undefined;
  afterEach(async () => {
    await service?.close();
    service = undefined;
  });

  const tlsEnv = (files: CertFiles, extra: Record<string, string> = {}): Record<string, string> => ({ HOOKWATCH_HTTP_TLS_CERT_FILE: files.certFile, HOOKWATCH_HTTP_TLS_KEY_FILE: files.keyFile, ...extra });

  it('serves the API, the dashboard, /metrics and the probes over https; plain http to the port gets 400', async () => {
    service = await startServiceUnderTest(tlsEnv(pki.server));
    expect(service.httpUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    // Without alerting.externalUrl, notifications link to the port as it is opened: over https.
    expect(service.externalUrl).toBe(service.httpUrl);
    // The OTLP ports stay plain: each listener has its own TLS settings.
    expect(service.otlpHttpUrl).toMatch(/^http:\/\//);
    await emitExecutions(service.otlpHttpUrl, [{ hookEvent: 'SessionStart', hookName: 'SessionStart:startup', additionalContextChars: 9_000, stdoutChars: 0 }]);
    const hooks = await get(`${service.httpUrl}/api/v1/hooks?from=now-1h&to=now%2B1h`, { ca: pki.ca.certFile });
    expect(hooks.status).toBe(200);
    expect(hooks.served).toBe(fingerprint(pki.server.certFile));
    expect((JSON.parse(hooks.body) as HooksResponse).hooks.map((h) => h.hookName)).toEqual(['SessionStart:startup']);
    const page = await get(`${service.httpUrl}/`, { ca: pki.ca.certFile });
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    // A browser that reached the dashboard over https once never falls back to plain http for it (HSTS); errors too.
    // And the refusals written before the app sees the request, those of Node's server: an Expect it cannot meet,
    // Host twice.
    const expectation = await get(`${service.httpUrl}/api/v1/hooks`, { ca: pki.ca.certFile, headers: { expect: 'something' } });
    expect(expectation.status).toBe(417);
    const twice = await get(`${service.httpUrl}/api/v1/hooks`, { ca: pki.ca.certFile, headers: { host: ['localhost', 'localhost'] as unknown as string } });
    expect(twice.status).toBe(400);
    for (const answer of [hooks, page, await get(`${service.httpUrl}/api/v1/nope`, { ca: pki.ca.certFile }), expectation, twice]) {
      expect(answer.headers['strict-transport-security']).toBe('max-age=31536000');
    }
    expect((await get(`${service.httpUrl}/metrics`, { ca: pki.ca.certFile })).body).toContain('hookwatch_hook_executions_total');
    expect((await get(`${service.httpUrl}/healthz`, { ca: pki.ca.certFile })).status).toBe(200);
    expect((await get(`${service.httpUrl}/readyz`, { ca: pki.ca.certFile })).status).toBe(200);
    // Plain http to the port: a 400 saying to use https://, not a page.
    const plain = await fetch(`${service.httpUrl.replace('https://', 'http://')}/healthz`);
    expect([plain.status, await plain.text()]).toEqual([400, 'Client sent an HTTP request to an HTTPS server: this port speaks TLS (http.tls), so use an https:// URL for it.\n']);
  });

  it('keeps the DNS-rebinding check over https: a name not allowed gets 403, localhost and allowed names pass; same-site writes work', async () => {
    // A host name that serves plain http on another port too: browsers are told to keep no HSTS rule for it.
    service = await startServiceUnderTest(tlsEnv(pki.server, { HOOKWATCH_HTTP_ALLOWED_HOSTS: 'hookwatch.internal', HOOKWATCH_HTTP_TLS_HSTS_MAX_AGE: '0' }));
    const port = new URL(service.httpUrl).port;
    const rebound = await get(`${service.httpUrl}/api/v1/hooks`, { ca: pki.ca.certFile, headers: { host: `evil.example:${port}` } });
    expect(rebound.status).toBe(403);
    expect(rebound.headers['strict-transport-security']).toBe('max-age=0');
    expect(JSON.parse(rebound.body)).toEqual({ error: { code: 'forbidden', message: 'host "evil.example" is not allowed: add it to http.allowedHosts to reach hookwatch by that name' } });
    for (const host of [`localhost:${port}`, `hookwatch.internal:${port}`, `127.0.0.1:${port}`]) {
      expect((await get(`${service.httpUrl}/api/v1/hooks`, { ca: pki.ca.certFile, headers: { host } })).status, host).toBe(200);
    }
    // A write from the dashboard's own https origin is accepted; one from another site is not.
    const silence = JSON.stringify({ matchers: [{ name: 'hook_name', value: 'Stop', isRegex: false }], endsAt: new Date(Date.now() + 3_600_000).toISOString(), createdBy: 'test', comment: 'over https' });
    const same = await get(`${service.httpUrl}/api/v1/silences`, { ca: pki.ca.certFile, method: 'POST', body: silence, headers: { host: `localhost:${port}`, origin: `https://localhost:${port}`, 'sec-fetch-site': 'same-origin', 'content-type': 'application/json' } });
    expect(same.status, same.body).toBe(201);
    const cross = await get(`${service.httpUrl}/api/v1/silences`, { ca: pki.ca.certFile, method: 'POST', body: silence, headers: { host: `localhost:${port}`, origin: 'https://evil.example', 'sec-fetch-site': 'cross-site', 'content-type': 'application/json' } });
    expect(cross.status).toBe(403);
  });

  it('mutual TLS: a client certificate from the CA gets in; without one the connection is refused, /healthz included', async () => {
    service = await startServiceUnderTest(tlsEnv(pki.server, { HOOKWATCH_HTTP_TLS_CLIENT_CA_FILE: pki.ca.certFile }));
    expect((await get(`${service.httpUrl}/metrics`, { ca: pki.ca.certFile, cert: pki.client })).status).toBe(200);
    await expect(get(`${service.httpUrl}/healthz`, { ca: pki.ca.certFile })).rejects.toThrow(/certificate required|alert/i);
    await expect(get(`${service.httpUrl}/healthz`, { ca: pki.ca.certFile, cert: pki.stranger })).rejects.toThrow();
  });

  it('a rotated certificate is served to new connections without a restart; a bad new key keeps the old one', async () => {
    const dir = join(pki.dir, 'secret');
    mkdirSync(dir, { recursive: true });
    const files = { certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key') };
    copyFileSync(pki.server.certFile, files.certFile);
    copyFileSync(pki.server.keyFile, files.keyFile);
    service = await startServiceUnderTest(tlsEnv(files, { HOOKWATCH_HTTP_TLS_RELOAD_INTERVAL: '1s' }));
    expect((await get(`${service.httpUrl}/healthz`, { ca: pki.ca.certFile })).served).toBe(fingerprint(pki.server.certFile));
    copyFileSync(pki.rotated.certFile, files.certFile);
    copyFileSync(pki.rotated.keyFile, files.keyFile);
    await expect.poll(async () => (await get(`${service!.httpUrl}/healthz`, { ca: pki.ca.certFile })).served, { timeout: 5000, interval: 200 }).toBe(fingerprint(pki.rotated.certFile));
    // A key that is not the certificate's: the renewed certificate stays in use.
    copyFileSync(pki.server.keyFile, files.keyFile);
    await new Promise((r) => setTimeout(r, 1500));
    const after = await get(`${service.httpUrl}/healthz`, { ca: pki.ca.certFile });
    expect(after.status).toBe(200);
    expect(after.served).toBe(fingerprint(pki.rotated.certFile));
  });

  it('a start with a file that cannot be used fails, naming the setting and never showing the key', async () => {
    const refused = startServiceUnderTest(tlsEnv({ certFile: pki.server.certFile, keyFile: pki.rotated.keyFile }));
    await expect(refused).rejects.toThrow(`http.tls.keyFile ${pki.rotated.keyFile} is not the key of the certificate in http.tls.certFile ${pki.server.certFile}`);
    await expect(refused).rejects.not.toThrow(pemBody(pki.rotated.keyFile));
    await expect(startServiceUnderTest(tlsEnv({ certFile: join(pki.dir, 'none.crt'), keyFile: pki.server.keyFile }))).rejects.toThrow(`http.tls.certFile ${join(pki.dir, 'none.crt')}: cannot read it (ENOENT)`);
  });
});
