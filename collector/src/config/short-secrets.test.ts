/**
 * Secrets too short to be secret are refused when the configuration loads, naming the setting and never the
 * value; every secret that is accepted is scrubbed from the log, however short it may be.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, configSecrets, loadConfig, toConfig } from './index.ts';
import { createLogger } from '../telemetry/logger.ts';
import { secretScrubber } from '../net/endpoint-secrets.ts';
import { logsUrl } from '../notify/otlp.ts';

/** Loads `env` and, when given, a config file with `file` as its text. */
function load(env: Record<string, string>, file?: string): ReturnType<typeof toConfig> {
  return toConfig(loadConfig({ env, ...(file === undefined ? {} : { flags: { config: 'hookwatch.yaml' }, readFile: () => file }) }));
}

/** The message `load` fails with. */
function refusal(env: Record<string, string>, file?: string): string {
  try {
    load(env, file);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('loaded');
}

const receiver = (extra: string): string => `alerting:\n  receivers:\n    - { name: ops, url: "https://hooks.example.com/services/T000/B000", ${extra} }\n`;

describe('secrets too short to be secret', () => {
  it.each([
    ['otlp.ingestToken', { HOOKWATCH_INGEST_TOKEN: 'Zq9-ingest-1234' }],
    ['http.auth.token', { HOOKWATCH_HTTP_AUTH_MODE: 'bearer', HOOKWATCH_HTTP_AUTH_TOKEN: 'Zq9-http-123456' }],
  ])('%s shorter than 16 characters is refused, naming the setting and the minimum, not the token', (key, env) => {
    const message = refusal(env);
    expect(message).toContain(key);
    expect(message).toContain('shorter than 16 characters');
    expect(message).not.toContain(Object.values(env).at(-1));
  });

  it('a token of 16 characters is accepted for both settings', () => {
    const config = load({ HOOKWATCH_INGEST_TOKEN: 'Zq9-ingest-12345', HOOKWATCH_HTTP_AUTH_MODE: 'bearer', HOOKWATCH_HTTP_AUTH_TOKEN: 'Zq9-http-1234567' });
    expect(config.otlp.ingestToken).toBe('Zq9-ingest-12345');
    expect(config.http.auth.token).toBe('Zq9-http-1234567');
  });

  it.each([
    ['http.auth.password', 'Zq9-pw1', { HOOKWATCH_HTTP_AUTH_MODE: 'basic', HOOKWATCH_HTTP_AUTH_USERNAME: 'team', HOOKWATCH_HTTP_AUTH_PASSWORD: 'Zq9-pw1' }, undefined],
    ['privacy.hashKey', 'Zq9-hash-key-15', { HOOKWATCH_PRIVACY_HASH_KEY: 'Zq9-hash-key-15' }, undefined],
    ['db', 'Zq9', { HOOKWATCH_DB: 'postgres://hw:Zq9@db:5432/hookwatch' }, undefined],
    ['db', 'Zq9', { HOOKWATCH_DB: 'postgres://hw@db:5432/hookwatch?password=Zq9' }, undefined],
    ['forward.endpoint', 'Zq9', { HOOKWATCH_FORWARD_ENDPOINT: 'https://otlp:Zq9@collector.example.com:4318' }, undefined],
    ['forward.headers', 'Zq9', { HOOKWATCH_FORWARD_HEADERS: 'x-api-key=Zq9' }, undefined],
    ['forward.headers', 'Zq9', { HOOKWATCH_FORWARD_HEADERS: 'authorization=Bearer Zq9' }, undefined],
    ['alerting.otlp.endpoint', 'Zq9', { HOOKWATCH_ALERT_OTLP_ENDPOINT: 'https://otlp:Zq9@collector.example.com:4318' }, undefined],
    ['alerting.externalUrl', 'Zq9', { HOOKWATCH_EXTERNAL_URL: 'https://ops:Zq9@hookwatch.example.com' }, undefined],
    ['alerting.otlp.headers.x-api-key', 'Zq9', {}, 'alerting:\n  otlp:\n    endpoint: https://collector.example.com:4318\n    headers: { x-api-key: Zq9 }\n'],
    ['alerting.receivers[0].url', 'Zq9', {}, 'alerting:\n  receivers:\n    - { name: ops, url: "https://hw:Zq9@am.example.com:9093" }\n'],
    ['alerting.receivers[0].headers.X-Key', 'Zq9', {}, receiver('headers: { X-Key: Zq9 }')],
    ['alerting.receivers[0].bearerToken', 'Zq9', {}, receiver('bearerToken: Zq9')],
    ['alerting.receivers[0].basicAuth.password', 'Zq9', {}, receiver('basicAuth: { username: hw, password: Zq9 }')],
    ['alerting.receivers[0].signingSecret', 'whsec_WnE5', {}, receiver('signingSecret: whsec_WnE5')],
  ])('%s holding a secret too short is refused, naming it and not the secret', (key, secret, env, file) => {
    const message = refusal(env, file);
    expect(message).toContain(key);
    expect(message).toMatch(/shorter than \d+ characters|at least 16 bytes/);
    expect(message).not.toContain(secret);
  });

  it('every secret of the shortest length accepted is scrubbed from the log and from the alert export\'s text', () => {
    const env = {
      HOOKWATCH_INGEST_TOKEN: 'Ik7-ingest-12345',
      HOOKWATCH_HTTP_AUTH_MODE: 'basic',
      HOOKWATCH_HTTP_AUTH_USERNAME: 'team',
      HOOKWATCH_HTTP_AUTH_PASSWORD: 'Pw8-pw12',
      HOOKWATCH_PRIVACY_HASH_KEY: 'Hk5-hash-1234567',
      HOOKWATCH_DB: 'postgres://hw:Db4x@db:5432/hookwatch',
      HOOKWATCH_FORWARD_ENDPOINT: 'https://otlp:Fw3x@collector.example.com:4318',
      HOOKWATCH_FORWARD_HEADERS: 'x-api-key=Fh2x,authorization=Bearer Fb0x',
      HOOKWATCH_ALERT_OTLP_ENDPOINT: 'https://otlp:Ae1x@collector.example.com:4318',
      HOOKWATCH_EXTERNAL_URL: 'https://ops:Xu2x@hookwatch.example.com',
    };
    const file = 'alerting:\n  otlp:\n    headers: { x-api-key: Ah9x, authorization: Bearer Ab0x }\n  receivers:\n'
      + '    - { name: a, url: "https://hw:Ru8x@am.example.com:9093" }\n'
      + '    - { name: b, url: "https://hooks.example.com/b", headers: { X-Key: Rh7x }, bearerToken: Rb6x }\n'
      + '    - { name: c, url: "https://hooks.example.com/c", basicAuth: { username: hw, password: Rp5x } }\n';
    const config = load(env, file);
    const secrets = ['Ik7-ingest-12345', 'Pw8-pw12', 'Tk6-http-1234567', 'Hk5-hash-1234567', 'Db4x', 'Fw3x', 'Fh2x', 'Ae1x', 'Ah9x', 'Ru8x', 'Rh7x', 'Rb6x', 'Rp5x', 'Fb0x', 'Ab0x', 'Xu2x'];
    const lines: string[] = [];
    // The bearer token is the credential of another mode, which is not set beside basic.
    const bearer = load({ HOOKWATCH_HTTP_AUTH_MODE: 'bearer', HOOKWATCH_HTTP_AUTH_TOKEN: 'Tk6-http-1234567' });
    const logger = createLogger({ level: 'info', secrets: [...configSecrets(config), ...configSecrets(bearer)], write: (l) => lines.push(l) });
    for (const s of secrets) logger.info(`refused: ${s}.`, { detail: `(${s})` });
    expect(lines).toHaveLength(secrets.length);
    for (const [i, line] of lines.entries()) expect(line, secrets[i]).not.toContain(secrets[i]);
    const scrub = secretScrubber(config.alerting.otlp.endpoint, config.alerting.otlp.headers, [logsUrl(config.alerting.otlp.endpoint)]);
    expect(scrub('export failed: Ae1x, Ah9x, token Ab0x')).toBe('export failed: <redacted>, <redacted>, token <redacted>');
  });
});
