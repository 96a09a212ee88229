/**
 * The TLS settings as people write them: off unless a certificate and key are given, checked together at start,
 * file paths shown where settings are shown and the text of a key never, even when it is pasted in place of
 * its path.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ConfigError, effectiveDocument, loadConfig, toConfig } from '../config/index.ts';
import { HAVE_OPENSSL, pemBody, useTestPki } from '../../test/support/certs.ts';
import { readFileSync, writeFileSync } from 'node:fs';

/** The ConfigError message of a start with these environment variables, or 'accepted'. */
function refused(vars: Record<string, string>): string {
  try {
    toConfig(loadConfig({ env: vars }));
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  return 'accepted';
}


const MAIN = fileURLToPath(new URL('../main.ts', import.meta.url));
const SECTIONS = [{ section: 'otlp.tls', env: 'HOOKWATCH_OTLP_TLS' }, { section: 'http.tls', env: 'HOOKWATCH_HTTP_TLS' }] as const;

/** `hookwatch <args>` with `env`; its exit status and output. */
async function hookwatch(args: readonly string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return promisify(execFile)(process.execPath, [MAIN, ...args], { env: { PATH: process.env['PATH'] ?? '', ...env } }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}

describe('TLS settings', () => {
  it('leave every listener plain by default, with TLS 1.2 and a 30 s reload once turned on', () => {
    const loaded = loadConfig({ env: {} });
    const c = toConfig(loaded);
    expect(c.otlp.tls).toBeUndefined();
    expect(c.http.tls).toBeUndefined();
    for (const { section } of SECTIONS) {
      expect(loaded.values.get(`${section}.certFile`)).toBe('');
      expect(loaded.values.get(`${section}.minVersion`)).toBe('1.2');
      expect(loaded.values.get(`${section}.reloadInterval`)).toBe(30_000);
    }
  });

  for (const { section, env } of SECTIONS) {
    it(`${section}: certFile and keyFile go together, and clientCaFile needs both`, () => {
      expect(refused({ [`${env}_CERT_FILE`]: '/etc/tls/tls.crt' })).toBe(`${section}.certFile and ${section}.keyFile go together: set both to serve TLS, or neither`);
      expect(refused({ [`${env}_KEY_FILE`]: '/etc/tls/tls.key' })).toBe(`${section}.certFile and ${section}.keyFile go together: set both to serve TLS, or neither`);
      expect(refused({ [`${env}_CLIENT_CA_FILE`]: '/etc/tls/ca.crt' })).toBe(`${section}.clientCaFile needs ${section}.certFile and ${section}.keyFile: mutual TLS is TLS with client certificates`);
      // Set without a certificate they would apply to nothing: refused, named, not silently ignored.
      expect(refused({ [`${env}_MIN_VERSION`]: '1.3' })).toBe(`${section}.minVersion is set but ${section}.certFile and ${section}.keyFile are not, so no TLS is served: set both, or unset ${section}.*`);
      expect(refused({ [`${env}_RELOAD_INTERVAL`]: '10s' })).toBe(`${section}.reloadInterval is set but ${section}.certFile and ${section}.keyFile are not, so no TLS is served: set both, or unset ${section}.*`);
      // Written as their defaults (as `hookwatch config` prints them) they change nothing: accepted.
      expect(refused({ [`${env}_MIN_VERSION`]: '1.2', [`${env}_RELOAD_INTERVAL`]: '30s' })).toBe('accepted');
      expect(refused({ [`${env}_MIN_VERSION`]: '1.1' })).toMatch(new RegExp(`invalid value "1.1" for ${section.replace('.', '\\.')}\\.minVersion: expected one of 1\\.2, 1\\.3`));
    });

    if (section === 'http.tls') {
      it('http.tls.hstsMaxAge: set without a certificate it would apply to nothing, refused; its default written is accepted', () => {
        expect(refused({ HOOKWATCH_HTTP_TLS_HSTS_MAX_AGE: '1d' })).toBe('http.tls.hstsMaxAge is set but http.tls.certFile and http.tls.keyFile are not, so no TLS is served: set both, or unset http.tls.*');
        expect(refused({ HOOKWATCH_HTTP_TLS_HSTS_MAX_AGE: '365d' })).toBe('accepted');
      });

      it('http.tls.hstsMaxAge: a value that is not whole seconds is refused, naming it, never sent cut to max-age=0', () => {
        const tls = { HOOKWATCH_HTTP_TLS_CERT_FILE: '/etc/tls/tls.crt', HOOKWATCH_HTTP_TLS_KEY_FILE: '/etc/tls/tls.key' };
        for (const value of ['500ms', '1500ms', '999ms']) {
          expect(refused({ ...tls, HOOKWATCH_HTTP_TLS_HSTS_MAX_AGE: value }), value).toBe(`http.tls.hstsMaxAge must be a whole number of seconds (Strict-Transport-Security counts its max-age in seconds): ${value} is not`);
        }
        for (const [value, seconds] of [['0', 0], ['0s', 0], ['1s', 1], ['2000ms', 2], ['1d', 86_400]] as const) {
          expect(toConfig(loadConfig({ env: { ...tls, HOOKWATCH_HTTP_TLS_HSTS_MAX_AGE: value } })).http.hstsMaxAgeSeconds, value).toBe(seconds);
        }
      });
    }

    it(`${section}: PEM text where a path belongs is refused, and not repeated`, () => {
      const pem = '-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgSeCrEtKeYtExT\n-----END PRIVATE KEY-----\n';
      let message = '';
      try {
        loadConfig({ env: { [`${env}_KEY_FILE`]: pem } });
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toBe(`environment ${env}_KEY_FILE: invalid value (the text of a file, not shown) for ${section}.keyFile: expected the path of a file, not its contents: write the PEM text to a file (e.g. a mounted Secret) and give its path`);
      const [group, sub] = section.split('.') as [string, string];
      const yaml = `${group}:\n  ${sub}:\n    keyFile: "${pem.replace(/\n/g, '\\n')}"\n`;
      expect(() => loadConfig({ env: { HOOKWATCH_CONFIG: 'hookwatch.yaml' }, readFile: () => yaml })).toThrow(/the text of a file, not shown/);
      expect(() => loadConfig({ env: { HOOKWATCH_CONFIG: 'hookwatch.yaml' }, readFile: () => yaml })).not.toThrow(/SeCrEtKeYtExT/);
    });
  }
});

describe('client TLS settings without their endpoint', () => {
  const CLIENTS = [
    { section: 'forward.tls', env: 'HOOKWATCH_FORWARD_TLS', endpoint: 'forward.endpoint', endpointEnv: 'HOOKWATCH_FORWARD_ENDPOINT', server: 'the destination' },
    { section: 'alerting.otlp.tls', env: 'HOOKWATCH_ALERT_OTLP_TLS', endpoint: 'alerting.otlp.endpoint', endpointEnv: 'HOOKWATCH_ALERT_OTLP_ENDPOINT', server: 'the alert event endpoint' },
  ] as const;
  for (const { section, env, endpoint, endpointEnv, server } of CLIENTS) {
    it(`${section}: refused without ${endpoint}, naming the setting and never its value`, () => {
      for (const [name, variable, value] of [['caFile', 'CA_FILE', '/etc/tls/secret-ca.crt'], ['serverName', 'SERVER_NAME', 'otlp.example.com'], ['insecureSkipVerify', 'INSECURE_SKIP_VERIFY', 'true'], ['minVersion', 'MIN_VERSION', '1.3'], ['reloadInterval', 'RELOAD_INTERVAL', '10s']] as const) {
        const message = refused({ [`${env}_${variable}`]: value });
        expect(message).toBe(`${section}.${name} is set but ${endpoint} is not, so no connection is made to ${server}: set ${endpoint} to an https:// URL, or unset ${section}.*`);
        expect(message).not.toContain(value);
      }
      expect(refused({ [`${env}_CERT_FILE`]: '/etc/tls/tls.crt', [`${env}_KEY_FILE`]: '/etc/tls/tls.key' })).toBe(`${section}.certFile is set but ${endpoint} is not, so no connection is made to ${server}: set ${endpoint} to an https:// URL, or unset ${section}.*`);
      // With the endpoint set, or with nothing set, there is nothing to refuse.
      expect(refused({ [endpointEnv]: 'https://otlp.example.com', [`${env}_MIN_VERSION`]: '1.3' })).toBe('accepted');
      expect(refused({})).toBe('accepted');
      expect(refused({ [`${env}_MIN_VERSION`]: '1.2', [`${env}_RELOAD_INTERVAL`]: '30s', [`${env}_INSECURE_SKIP_VERIFY`]: 'false' })).toBe('accepted');
    });
  }
});

describe('client TLS server names', () => {
  /** The start with `name` as the server name of each client: forward, alert events, a receiver. */
  const starts = (name: string): string[] => [
    refused({ HOOKWATCH_FORWARD_ENDPOINT: 'https://10.0.0.5:4318', HOOKWATCH_FORWARD_TLS_SERVER_NAME: name }),
    refused({ HOOKWATCH_ALERT_OTLP_ENDPOINT: 'https://10.0.0.5:4318', HOOKWATCH_ALERT_OTLP_TLS_SERVER_NAME: name }),
    (() => {
      try {
        toConfig(loadConfig({ env: { HOOKWATCH_CONFIG: 'hookwatch.yaml' }, readFile: () => `alerting:\n  receivers:\n    - { name: am, type: alertmanager, url: 'https://10.0.0.5:9093', tls: { serverName: ${JSON.stringify(name)} } }\n` }));
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as Error).message;
      }
      return 'accepted';
    })(),
  ];

  it('takes the names Node sends as SNI, underscores of internal DNS names included', () => {
    for (const name of ['otlp_collector.corp.example', 'OTLP-1.internal', '_collector._tcp.example', 'localhost', 'otlp.example.com.']) {
      expect(starts(name), name).toEqual(['accepted', 'accepted', 'accepted']);
    }
  });

  it('refuses an IP address, which SNI cannot carry, and what is no host name, naming the setting', () => {
    for (const name of ['10.0.0.5', '::1', '[::1]']) {
      expect(starts(name), name).toEqual([
        expect.stringMatching(/^invalid value for forward\.tls\.serverName: an IP address/),
        expect.stringMatching(/^invalid value for alerting\.otlp\.tls\.serverName: an IP address/),
        expect.stringMatching(/invalid value for alerting\.receivers\[0\]\.tls\.serverName: an IP address/),
      ]);
    }
    for (const name of ['otlp collector', 'otlp..example', '.example', 'ötlp.example', 'otlp/example', `${'a'.repeat(64)}.example`]) {
      expect(starts(name), name).toEqual([
        'invalid value for forward.tls.serverName: expected a host name such as otlp.example.com',
        'invalid value for alerting.otlp.tls.serverName: expected a host name such as otlp.example.com',
        expect.stringContaining('invalid value for alerting.receivers[0].tls.serverName: expected a host name such as otlp.example.com'),
      ]);
    }
    // An empty name in a receiver's file is refused; an empty environment variable leaves the setting unset.
    expect(starts('')[2]).toContain('alerting.receivers[0].tls.serverName: expected a host name');
  });
});

describe.skipIf(!HAVE_OPENSSL)('TLS settings with real files', () => {
  const pki = useTestPki('hookwatch-tls-settings-');

  for (const { section, env } of SECTIONS) {
    it(`${section}: read from the file, minVersion written as a YAML number`, () => {
      const [group, sub] = section.split('.') as [string, string];
      const yaml = `${group}:\n  ${sub}:\n    certFile: ${pki.server.certFile}\n    keyFile: ${pki.server.keyFile}\n    clientCaFile: ${pki.ca.certFile}\n    minVersion: 1.3\n    reloadInterval: 10s\n`;
      const loaded = loadConfig({ env: { HOOKWATCH_CONFIG: 'hookwatch.yaml' }, readFile: () => yaml });
      const config = toConfig(loaded);
      const tls = section === 'otlp.tls' ? config.otlp.tls : config.http.tls;
      expect(tls).toEqual({ section, certFile: pki.server.certFile, keyFile: pki.server.keyFile, clientCaFile: pki.ca.certFile, minVersion: '1.3', reloadIntervalMs: 10_000 });
      expect(JSON.stringify(effectiveDocument(loaded))).not.toContain(pemBody(pki.server.keyFile));
      expect(env).toMatch(/^HOOKWATCH_/);
    });

    it(`${section}: \`hookwatch config\` shows the paths, never the key, and refuses a key that is not the certificate's`, async () => {
      const ok = await hookwatch(['config', '--json'], { [`${env}_CERT_FILE`]: pki.server.certFile, [`${env}_KEY_FILE`]: pki.server.keyFile });
      expect(ok.code, ok.stderr).toBe(0);
      const [group, sub] = section.split('.') as [string, string];
      const doc = JSON.parse(ok.stdout) as Record<string, Record<string, Record<string, unknown>>>;
      expect(doc[group]?.[sub]).toEqual({ certFile: pki.server.certFile, keyFile: pki.server.keyFile, clientCaFile: '', minVersion: '1.2', reloadInterval: '30s', ...(section === 'http.tls' ? { hstsMaxAge: '365d' } : {}) });
      expect(ok.stdout).not.toContain(pemBody(pki.server.keyFile));
      expect(ok.stdout).not.toContain(readFileSync(pki.server.certFile, 'utf8').split('\n')[1]);

      const bad = await hookwatch(['config'], { [`${env}_CERT_FILE`]: pki.server.certFile, [`${env}_KEY_FILE`]: pki.rotated.keyFile });
      expect(bad.code).toBe(2);
      expect(bad.stderr).toBe(`hookwatch: configuration error: ${section}.keyFile ${pki.rotated.keyFile} is not the key of the certificate in ${section}.certFile ${pki.server.certFile}\n`);
      const served = await hookwatch(['serve'], { [`${env}_CERT_FILE`]: pki.server.certFile, [`${env}_KEY_FILE`]: join(pki.dir, 'gone.key'), HOOKWATCH_DB: join(pki.dir, 'h.db') });
      expect(served.code).toBe(2);
      expect(served.stderr).toContain(`hookwatch: configuration error: ${section}.keyFile ${join(pki.dir, 'gone.key')}: cannot read it (ENOENT)\n`);
    });
  }

  it('forward.tls: `hookwatch config` shows the paths, never the key, and refuses a key that is not the certificate\'s', async () => {
    const env = { HOOKWATCH_FORWARD_ENDPOINT: 'https://otlp.example.com', HOOKWATCH_FORWARD_TLS_CA_FILE: pki.ca.certFile, HOOKWATCH_FORWARD_TLS_CERT_FILE: pki.server.certFile };
    const ok = await hookwatch(['config', '--json'], { ...env, HOOKWATCH_FORWARD_TLS_KEY_FILE: pki.server.keyFile });
    expect(ok.code, ok.stderr).toBe(0);
    const doc = JSON.parse(ok.stdout) as { forward: { tls: unknown } };
    expect(doc.forward.tls).toEqual({ caFile: pki.ca.certFile, certFile: pki.server.certFile, keyFile: pki.server.keyFile, serverName: '', insecureSkipVerify: false, minVersion: '1.2', reloadInterval: '30s' });
    expect(ok.stdout).not.toContain(pemBody(pki.server.keyFile));
    const bad = await hookwatch(['config'], { ...env, HOOKWATCH_FORWARD_TLS_KEY_FILE: pki.rotated.keyFile });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe(`hookwatch: configuration error: forward.tls.keyFile ${pki.rotated.keyFile} is not the key of the certificate in forward.tls.certFile ${pki.server.certFile}\n`);
    expect(bad.stderr).not.toContain(pemBody(pki.rotated.keyFile));
  });

  it('alerting.receivers[].tls: `hookwatch config` and `serve` check the files as for forward.tls, never showing the key', async () => {
    const file = join(pki.dir, 'receivers.yaml');
    const write = (tls: Record<string, string>): Record<string, string> => {
      writeFileSync(file, JSON.stringify({ alerting: { receivers: [{ name: 'team', type: 'webhook', url: 'https://hooks.example.com/alert', tls }] } }));
      return { HOOKWATCH_CONFIG: file, HOOKWATCH_DB: join(pki.dir, 'receivers.db') };
    };
    const ok = await hookwatch(['config', '--json'], write({ caFile: pki.ca.certFile, certFile: pki.client.certFile, keyFile: pki.client.keyFile, reloadInterval: '1m' }));
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).not.toContain(pemBody(pki.client.keyFile));
    const bad = await hookwatch(['config'], write({ caFile: pki.ca.certFile, certFile: pki.client.certFile, keyFile: pki.rotated.keyFile }));
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe(`hookwatch: configuration error: alerting.receivers[0].tls.keyFile ${pki.rotated.keyFile} is not the key of the certificate in alerting.receivers[0].tls.certFile ${pki.client.certFile}\n`);
    expect(bad.stderr).not.toContain(pemBody(pki.rotated.keyFile));
    const notCa = await hookwatch(['config'], write({ caFile: pki.client.keyFile }));
    expect(notCa.stderr).toBe(`hookwatch: configuration error: alerting.receivers[0].tls.caFile ${pki.client.keyFile}: no PEM certificate in it\n`);
    // tls beside an http:// URL speaks no TLS: refused as forward.tls.* is, before any file is read.
    writeFileSync(file, JSON.stringify({ alerting: { receivers: [{ name: 'team', type: 'webhook', url: 'http://hooks.example.com/alert', tls: { caFile: pki.ca.certFile } }] } }));
    const plain = await hookwatch(['config'], { HOOKWATCH_CONFIG: file });
    expect(plain.code).toBe(2);
    expect(plain.stderr).toContain('alerting.receivers[0].tls.caFile is set but alerting.receivers[0].url is not an https:// URL, so no TLS is spoken with the receiver');
    const served = await hookwatch(['serve'], write({ caFile: join(pki.dir, 'gone.crt') }));
    expect(served.code).toBe(2);
    expect(served.stderr).toContain(`hookwatch: configuration error: alerting.receivers[0].tls.caFile ${join(pki.dir, 'gone.crt')}: cannot read it (ENOENT)\n`);
  });
});
