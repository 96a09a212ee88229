import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { ConfigError, SETTINGS, effectiveDocument, flagName, loadConfig, parseDuration, toConfig } from './index.ts';
import { MAX_CONFIG_FILE_BYTES } from './load.ts';
import { renderConfig } from '../cli/config-output.ts';
import { tempDir } from '../../test/helpers.ts';

const configs = fileURLToPath(new URL('../../testdata/configs/', import.meta.url));
const readFile = (p: string): string => readFileSync(p, 'utf8');

describe('precedence: defaults < file < environment < flags', () => {
  it('uses the defaults with nothing set', () => {
    const c = toConfig(loadConfig({ env: {} }));
    expect(c.otlp.http.addr).toBe('127.0.0.1:4318');
    expect(c.http.addr).toBe('127.0.0.1:9318');
    expect(c.db).toBe('./data/hookwatch.db');
    expect(c.otlp.ingestToken).toBe('');
    expect(c.retention.eventsMs).toBe(30 * 86_400_000);
    expect(c.retention.rollupsMs).toBe(400 * 86_400_000);
    expect(c.retention.minuteRollupsMs).toBe(2 * 86_400_000);
  });

  it('bounds every duration, so that now less the longest is still a date', () => {
    const now = Date.now();
    for (const s of SETTINGS.filter((x) => x.type === 'duration')) {
      expect(s.max, s.key).toBeDefined();
      expect(Number.isNaN(new Date(now - (s.max as number)).getTime()), s.key).toBe(false);
    }
    const longest = toConfig(loadConfig({ env: { HOOKWATCH_RETENTION_EVENTS: '36500d', HOOKWATCH_RETENTION_ROLLUPS: '36500d', HOOKWATCH_RETENTION_MINUTE_ROLLUPS: '36500d' } })).retention;
    expect(longest).toEqual({ eventsMs: 36_500 * 86_400_000, rollupsMs: 36_500 * 86_400_000, minuteRollupsMs: 36_500 * 86_400_000 });
  });

  it('keeps per-minute rollups no longer than the raw events they copy', () => {
    expect(toConfig(loadConfig({ env: { HOOKWATCH_RETENTION_MINUTE_ROLLUPS: '6h' } })).retention.minuteRollupsMs).toBe(6 * 3_600_000);
    // A short events retention alone keeps working: the minute rollups follow it.
    expect(toConfig(loadConfig({ env: { HOOKWATCH_RETENTION_EVENTS: '1d' } })).retention.minuteRollupsMs).toBe(86_400_000);
    expect(toConfig(loadConfig({ env: { HOOKWATCH_RETENTION_EVENTS: '3h', HOOKWATCH_RETENTION_MINUTE_ROLLUPS: '7d' } })).retention.minuteRollupsMs).toBe(3 * 3_600_000);
    expect(() => loadConfig({ env: { HOOKWATCH_RETENTION_MINUTE_ROLLUPS: '10m' } })).toThrow(/retention\.minuteRollups/);
  });

  it('a file overrides defaults, the environment the file, flags the environment', () => {
    const file = `${configs}good.yaml`;
    const fromFile = toConfig(loadConfig({ env: { HOOKWATCH_CONFIG: file }, readFile }));
    expect(fromFile.otlp.http.addr).toBe('0.0.0.0:4318');
    expect(fromFile.otlp.maxRequestBytes).toBe(32 * 1024 * 1024);
    expect(fromFile.retention.eventsMs).toBe(14 * 86_400_000);
    expect(fromFile.dimensions).toEqual(['team', 'workflow.name']);
    const fromEnv = toConfig(loadConfig({ env: { HOOKWATCH_CONFIG: file, HOOKWATCH_HTTP_ADDR: '127.0.0.1:9500' }, readFile }));
    expect(fromEnv.http.addr).toBe('127.0.0.1:9500');
    const fromFlag = loadConfig({ env: { HOOKWATCH_HTTP_ADDR: '127.0.0.1:9500' }, flags: { config: file, 'http-addr': '127.0.0.1:9600' }, readFile });
    expect(toConfig(fromFlag).http.addr).toBe('127.0.0.1:9600');
    expect(fromFlag.sources.get('http.addr')).toBe('flag');
    expect(fromFlag.sources.get('log.level')).toBe('file');
  });
});

describe('${env:NAME} in the config file', () => {
  const file = [
    'log: { level: "${env:LEVEL}" }',
    'alerting:',
    '  receivers:',
    '    - name: ops',
    '      url: "${env:OPS_WEBHOOK_URL}"',
    '      signingSecret: "whsec_${env:OPS_SIGNING_KEY}"',
    '      headers: { X-Note: "costs $${HOME} literally" }',
    '',
  ].join('\n');
  const load = (env: NodeJS.ProcessEnv, text = file) => loadConfig({ env: { HOOKWATCH_CONFIG: 'hookwatch.yaml', ...env }, readFile: () => text });

  it('takes values from the environment (a Secret), so the file itself holds none', () => {
    const env = { LEVEL: 'debug', OPS_WEBHOOK_URL: 'https://hooks.example.com/T0/B0/s3cr3t', OPS_SIGNING_KEY: 'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' };
    const config = toConfig(load(env));
    expect(config.log.level).toBe('debug');
    const [ops] = config.alerting.receivers;
    expect(ops?.url).toBe('https://hooks.example.com/T0/B0/s3cr3t');
    expect(ops?.signingSecret).toBe('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');
    expect(ops?.headers['X-Note']).toBe('costs ${HOME} literally');
    // `hookwatch config` still hides what came in through a variable.
    expect(JSON.stringify(effectiveDocument(load(env)))).not.toMatch(/s3cr3t|MfKQ9r8G/);
  });

  it('an unset variable, or a reference that is not one, stops the start naming the key and the variable', () => {
    expect(() => load({ LEVEL: 'info', OPS_SIGNING_KEY: 'k' })).toThrow('config file hookwatch.yaml: alerting.receivers[0].url refers to ${env:OPS_WEBHOOK_URL}, which is not set');
    expect(() => load({}, 'log: { level: "${env:LOG LEVEL}" }\n')).toThrow('log.level holds a ${ that is not a variable reference');
    expect(() => load({}, 'log: { level: "${LEVEL}" }\n')).toThrow('log.level holds a ${ that is not a variable reference; write ${env:NAME}');
    // A secret that happens to hold `${` is never quoted back, not even in part.
    const secret = 'alerting:\n  receivers:\n    - { name: ops, url: "https://hooks.example.com/x", bearerToken: "abc${def-very-secret-token" }\n';
    let message = '';
    try {
      load({}, secret);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain('alerting.receivers[0].bearerToken holds a ${');
    expect(message).not.toMatch(/very-secret|def/);
  });

  // A variable is text: a number or boolean of a setting took it (`otlp.maxPendingRequests: ${env:N}`), one inside
  // a rule or receiver was refused ("expected true or false") whatever the variable held.
  it('gives numbers and booleans inside rules and receivers from variables, as it does to settings', () => {
    const text = [
      'alerting:',
      '  rules:',
      '    - { kind: persisted_ratio, threshold: "${env:RATIO}", minExecutions: "${env:MIN}" }',
      '    - { kind: growth, horizonDays: "${env:DAYS}" }',
      '  receivers:',
      '    - { name: ops, url: "https://hooks.example.com/T0/B0/s3cr3t", sendResolved: "${env:RESOLVED}", tls: { insecureSkipVerify: "${env:SKIP}" } }',
      '',
    ].join('\n');
    const config = toConfig(load({ RATIO: '0.25', MIN: '12', DAYS: '7', RESOLVED: 'false', SKIP: 'true' }, text));
    expect([config.alerting.rules[0]?.threshold, config.alerting.rules[0]?.minExecutions]).toEqual([0.25, 12]);
    expect(config.alerting.rules[1]?.horizonDays).toBe(7);
    expect(config.alerting.receivers[0]?.sendResolved).toBe(false);
    expect(config.alerting.receivers[0]?.tls?.insecureSkipVerify).toBe(true);
    // What is no number or boolean is still refused, naming the key.
    expect(() => toConfig(load({ RATIO: 'half', MIN: '12', DAYS: '7', RESOLVED: 'false', SKIP: 'true' }, text))).toThrow('alerting.rules[0].threshold: expected a number');
    expect(() => toConfig(load({ RATIO: '0.25', MIN: '1.5', DAYS: '7', RESOLVED: 'false', SKIP: 'true' }, text))).toThrow('alerting.rules[0].minExecutions: expected a whole number');
    expect(() => toConfig(load({ RATIO: '0.25', MIN: '12', DAYS: '7', RESOLVED: 'no', SKIP: 'true' }, text))).toThrow('alerting.receivers[0].sendResolved: expected true or false');
  });

  it('refuses the <redacted> that `hookwatch config` prints for a secret, naming the key', () => {
    const printed = effectiveDocument(loadConfig({ env: { HOOKWATCH_INGEST_TOKEN: 'tok-123-0123456789' } }));
    expect(JSON.stringify(printed)).toContain('<redacted>');
    expect(() => load({}, JSON.stringify(printed))).toThrow(/config file hookwatch\.yaml: otlp\.ingestToken holds <redacted>, which `hookwatch config` prints in place of a secret/);
    expect(() => load({}, 'alerting:\n  receivers:\n    - { name: ops, url: "https://alerts.example.com/<redacted>" }\n')).toThrow(/alerting\.receivers\[0\]\.url holds <redacted>/);
    // A secret in a URL's query string is printed the same way, and refused the same way.
    const db = effectiveDocument(loadConfig({ env: { HOOKWATCH_DB: 'postgres://hw@db/hookwatch?sslmode=require&password=s3cret' } })) as { db: string };
    expect(db.db).toBe('postgres://hw@db/hookwatch?sslmode=require&password=<redacted>');
    expect(() => load({}, `db: "${db.db}"\n`)).toThrow(/config file hookwatch\.yaml: db holds <redacted>/);
  });
  it.each([
    ['otlp.ingestToken', 'otlp:\n  ingestToken: ${env:TOKEN}\n', '<redacted>'],
    ['privacy.hashKey', 'privacy:\n  hashKey: "${env:TOKEN}"\n', '<redacted>'],
    ['alerting.receivers[0].url', 'alerting:\n  receivers:\n    - { name: ops, url: "${env:TOKEN}" }\n', 'https://alerts.example.com/<redacted>'],
    ['db', 'db: "postgres://hw:${env:TOKEN}@db/hookwatch"\n', '<redacted>'],
  ])('refuses the <redacted> a variable given by ${env:NAME} holds, for %s, as the docs promise', (key, text, value) => {
    expect(() => load({ TOKEN: value }, text)).toThrow(`config file hookwatch.yaml: ${key} (from \${env:TOKEN}) holds <redacted>, which \`hookwatch config\` prints in place of a secret; put the secret back`);
  });
});

describe('the <redacted> that `hookwatch config` prints, given back through a variable or a flag', () => {
  // A real secret for each setting that holds one, as its variable takes it.
  const SAMPLES: Record<string, string> = {
    db: 'postgres://hw:Pw9-url-secret@db/hookwatch',
    'forward.endpoint': 'https://ops:Pw9-url-secret@fwd.example.com/v1',
    'alerting.externalUrl': 'https://ops:Pw9-url-secret@hw.example.com/',
    'alerting.otlp.endpoint': 'https://ops:Pw9-url-secret@otel.example.com/',
    'forward.headers': 'x-api-key=Pw9-header-secret',
  };
  const secretSettings = SETTINGS.filter((s) => (s.secret || s.redactValue) && s.env);
  const printed = (key: string, env: string): string => {
    const doc = effectiveDocument(loadConfig({ env: { [env]: SAMPLES[key] ?? 'S3cret-value-0123456789abcdef' } }));
    const value = key.split('.').reduce<unknown>((node, part) => (node as Record<string, unknown>)[part], doc);
    expect(value, key).toContain('<redacted>');
    return value as string;
  };

  it('is refused from the environment and from a flag for every secret setting, naming the setting, as from the file', () => {
    expect(secretSettings.map((s) => s.key).sort()).toEqual(['alerting.externalUrl', 'alerting.otlp.endpoint', 'db', 'forward.endpoint', 'forward.headers', 'http.auth.password', 'http.auth.token', 'otlp.ingestToken', 'privacy.hashKey']);
    for (const s of secretSettings) {
      const env = s.env as string;
      const value = printed(s.key, env);
      expect(() => loadConfig({ env: { [env]: value } }), s.key).toThrow(`environment ${env}: ${s.key} holds <redacted>, which \`hookwatch config\` prints in place of a secret; put the secret back`);
      if (s.type === 'object') continue;
      const flag = flagName(s.key).slice(2);
      expect(() => loadConfig({ env: {}, flags: { [flag]: value } }), s.key).toThrow(`flag --${flag}: ${s.key} holds <redacted>, which \`hookwatch config\` prints in place of a secret; put the secret back`);
    }
  });

  it('stops `hookwatch config` and `serve` with exit 2 instead of taking <redacted> as the dashboard password', async () => {
    const main = fileURLToPath(new URL('../main.ts', import.meta.url));
    const run = (env: Record<string, string>, ...args: string[]) =>
      promisify(execFile)(process.execPath, [main, ...args], { env: { ...process.env, ...env }, timeout: 20_000 }).then(() => ({ code: 0, stderr: '' }), (e: { code: number; stderr: string }) => e);
    const fromEnv = await run({ HOOKWATCH_HTTP_AUTH_MODE: 'basic', HOOKWATCH_HTTP_AUTH_USERNAME: 'admin', HOOKWATCH_HTTP_AUTH_PASSWORD: '<redacted>' }, 'config');
    expect(fromEnv.code).toBe(2);
    expect(fromEnv.stderr).toContain('environment HOOKWATCH_HTTP_AUTH_PASSWORD: http.auth.password holds <redacted>');
    const fromFlag = await run({}, 'serve', '--db', ':memory:', '--http-addr', '127.0.0.1:0', '--otlp-http-addr', '127.0.0.1:0', '--otlp-grpc-addr', '127.0.0.1:0', '--http-auth-mode', 'basic', '--http-auth-username', 'admin', '--http-auth-password', '<redacted>');
    expect(fromFlag.code).toBe(2);
    expect(fromFlag.stderr).toContain('flag --http-auth-password: http.auth.password holds <redacted>');
  });
});

describe('YAML merge keys', () => {
  // As Prometheus and Alertmanager read them (Go's YAML library merges `<<`): one receiver or rule as the base of
  // the others, a key given beside `<<` taking precedence over the merged one.
  const text = [
    'alerting:',
    '  receivers:',
    '    - &ops { name: ops, url: "https://hooks.example.com/ops", sendResolved: false, timeout: 5s }',
    '    - <<: *ops',
    '      name: ops-eu',
    '      url: "https://hooks.example.com/ops-eu"',
    '  rules:',
    '    - &ratio { kind: persisted_ratio, threshold: 0.25, minExecutions: 12, window: 1h }',
    '    - { <<: *ratio, name: persisted_ratio_day, window: 24h }',
    '',
  ].join('\n');
  const load = (t: string) => loadConfig({ env: {}, flags: { config: 'hookwatch.yaml' }, readFile: () => t });

  it('merges a mapping into receivers, rules and sections, the keys beside `<<` taking precedence', () => {
    const config = toConfig(load(text));
    expect(config.alerting.receivers.map((r) => [r.name, r.url, r.sendResolved, r.timeoutMs])).toEqual([
      ['ops', 'https://hooks.example.com/ops', false, 5000],
      ['ops-eu', 'https://hooks.example.com/ops-eu', false, 5000],
    ]);
    expect(config.alerting.rules.map((r) => [r.name, r.threshold, r.minExecutions, r.windowMs])).toEqual([
      ['persisted_ratio', 0.25, 12, 3_600_000],
      ['persisted_ratio_day', 0.25, 12, 86_400_000],
    ]);
    const sections = load('otlp:\n  http: &keep { keepAliveTimeout: 70s }\nhttp: { <<: *keep, requestTimeout: 45s }\n');
    expect([sections.values.get('otlp.http.keepAliveTimeout'), sections.values.get('http.keepAliveTimeout'), sections.values.get('http.requestTimeout')]).toEqual([70_000, 70_000, 45_000]);
  });

  it('`hookwatch config` prints the merged values', async () => {
    const { dir, cleanup } = tempDir('hookwatch-merge-');
    try {
      const file = join(dir, 'hookwatch.yaml');
      writeFileSync(file, 'otlp:\n  http: &keep { keepAliveTimeout: 70s }\nhttp:\n  <<: *keep\n');
      const main = fileURLToPath(new URL('../main.ts', import.meta.url));
      const { stdout } = await promisify(execFile)(process.execPath, [main, 'config', '--json', '--config', file]);
      expect((JSON.parse(stdout) as { http: { keepAliveTimeout: string } }).http.keepAliveTimeout).toBe('70s');
    } finally {
      cleanup();
    }
  });

  it('refuses `<<` given something other than a mapping, naming the problem and not the value', () => {
    expect(() => load('http: { <<: secret-value-42, addr: "127.0.0.1:9318" }\n')).toThrow(/^config file hookwatch\.yaml is not valid YAML or JSON: Merge sources must be maps or map aliases$/);
    // Quoted, `<<` is a key as any other, and no setting's.
    expect(() => load('http: { "<<": { addr: "127.0.0.1:9318" } }\n')).toThrow('config file hookwatch.yaml: unknown key "http.<<"');
  });
});

describe('bad configuration fails at start with a message naming the key', () => {
  const cases: [string, () => unknown, RegExp][] = [
    ['unknown key in a file', () => loadConfig({ env: {}, flags: { config: `${configs}unknown-key.yaml` }, readFile }), /unknown key "otlp\.http\.adr"; did you mean "otlp\.http\.addr"\?/],
    ['unknown section in a file', () => loadConfig({ env: {}, flags: { config: 'x.yaml' }, readFile: () => 'retnetion:\n  events: 7d\n' }), /unknown key "retnetion"; did you mean "retention"\?/],
    ['unknown key far from any', () => loadConfig({ env: {}, flags: { config: 'x.yaml' }, readFile: () => 'zzzzzzzzzzzz: 1\n' }), /unknown key "zzzzzzzzzzzz"$/],
    ['bad duration in a file', () => loadConfig({ env: {}, flags: { config: `${configs}bad-duration.yaml` }, readFile }), /retention\.events: expected a duration/],
    ['bad address in a file', () => loadConfig({ env: {}, flags: { config: `${configs}bad-addr.yaml` }, readFile }), /http\.addr: expected host:port/],
    ['a file that is not a mapping', () => loadConfig({ env: {}, flags: { config: `${configs}not-a-mapping.yaml` }, readFile }), /must be a mapping/],
    ['a missing file', () => loadConfig({ env: {}, flags: { config: `${configs}nope.yaml` }, readFile }), /cannot read config file/],
    // Relative to the folder hookwatch runs in, which under `npm start` is hookwatch's own, not the shell's.
    ['a missing file given relative', () => loadConfig({ env: {}, flags: { config: 'nope.yaml' } }), new RegExp(`^cannot read config file nope\\.yaml \\(${resolve('nope.yaml').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\): ENOENT`)],
    // YAML refuses a key given twice in one mapping; a dotted key and its nested form are two mappings to it.
    ['a key set both dotted and nested', () => loadConfig({ env: {}, flags: { config: 'x.yaml' }, readFile: () => 'log.level: debug\nlog:\n  level: warn\n' }), /^config file x\.yaml: log\.level is set twice \(dotted and nested\): keep one$/],
    ['a section set both dotted and nested', () => loadConfig({ env: {}, flags: { config: 'x.yaml' }, readFile: () => 'otlp:\n  http:\n    addr: 127.0.0.1:1\notlp.http:\n  addr: 127.0.0.1:2\n' }), /^config file x\.yaml: otlp\.http\.addr is set twice \(dotted and nested\): keep one$/],
    // The parser's own advice ("please use YAML.parseAllDocuments()") is for the code that calls it.
    ['a file of two YAML documents', () => loadConfig({ env: {}, flags: { config: 'x.yaml' }, readFile: () => 'log:\n  level: debug\n---\nlog:\n  level: warn\n' }), /^config file x\.yaml holds a second YAML document at line 3, column 1: hookwatch reads one; merge them, or remove the ---$/],
    ['a section given a value', () => loadConfig({ env: {}, flags: { config: 'x.yaml' }, readFile: () => 'log: debug\n' }), /^config file x\.yaml: log must be a mapping of keys to values$/],
    ['a section under a section given a list', () => loadConfig({ env: {}, flags: { config: 'x.yaml' }, readFile: () => 'otlp:\n  http: [a]\n' }), /^config file x\.yaml: otlp\.http must be a mapping of keys to values$/],
    ['bad environment value', () => loadConfig({ env: { HOOKWATCH_OTLP_MAX_REQUEST_BYTES: 'lots' } }), /HOOKWATCH_OTLP_MAX_REQUEST_BYTES: invalid value "lots" for otlp\.maxRequestBytes/],
    ['out of range', () => loadConfig({ env: { HOOKWATCH_NEAR_THRESHOLD: '12000' } }), /delivery\.nearThreshold: must be at most 10000/],
    ['a duration out of range, in its units', () => loadConfig({ env: { HOOKWATCH_POSTGRES_LEASE_TTL: '20m' } }), /postgres\.leaseTtl: must be at most 10m$/],
    ['a libpq keyword/value string for db, its password not repeated', () => loadConfig({ env: { HOOKWATCH_DB: "host=db.internal dbname=hookwatch user=hw password=KvSECRET7" } }), /^environment HOOKWATCH_DB: invalid value "host=db\.internal dbname=hookwatch user=hw password=<redacted>" for db: a libpq keyword\/value connection string is not accepted: give a postgres:\/\/ URL/],
    ['a duration without a unit', () => loadConfig({ env: { HOOKWATCH_SHUTDOWN_TIMEOUT: '30' } }), /shutdown\.timeout: 30 has no unit: write 30s, 30m, 30h, 30d or 30ms$/],
    // Retention is counted in days (30d by default): the unit its writer most likely meant is among those offered.
    ['a retention without a unit', () => loadConfig({ env: { HOOKWATCH_RETENTION_EVENTS: '30' } }), /retention\.events: 30 has no unit: write 30s, 30m, 30h, 30d or 30ms$/],
    // A decimal is no number of milliseconds: 1.5ms is not offered.
    ['a decimal duration without a unit', () => loadConfig({ env: { HOOKWATCH_SHUTDOWN_TIMEOUT: '1.5' } }), /shutdown\.timeout: 1\.5 has no unit: write 1\.5s, 1\.5m, 1\.5h or 1\.5d$/],
    ['a rule window without a unit', () => toConfig(loadConfig({ env: {}, flags: { config: 'x.yaml' }, readFile: () => 'alerting:\n  rules:\n    - { kind: persisted, window: 3600 }\n' })), /alerting\.rules\[0\]\.window: 3600 has no unit/],
    // Past 2^53 ms (or bytes) the value is no longer a whole number: it stopped the start as a fault of hookwatch's
    // own ("setting retention.events: expected a number, got number", exit 1), printed as 8.64e+37ms by config.
    // Past about 273,000 years back a Date is invalid: each retention stops at 100 years, as Prometheus' does.
    // One of the two would be ignored: the longest raised to the first wait (forwarding), or the first cut to it.
    ['a forwarding first wait longer than the longest', () => toConfig(loadConfig({ env: {}, flags: { 'forward-retry-initial-interval': '1h', 'forward-retry-max-interval': '1s' } })), /^forward\.retry\.initialInterval \(1h\) is longer than forward\.retry\.maxInterval \(1s\), the longest wait: set forward\.retry\.initialInterval to at most forward\.retry\.maxInterval, or raise forward\.retry\.maxInterval$/],
    ['a delivery first backoff longer than the longest', () => toConfig(loadConfig({ env: {}, flags: { config: 'x.yaml' }, readFile: () => 'alerting:\n  delivery: { initialBackoff: 1m }\n', reload: true })), /^alerting\.delivery\.initialBackoff \(1m\) is longer than alerting\.delivery\.maxBackoff \(30s\), the longest wait: /],
    // A Host header never matches these: the name they meant would be answered 403.
    ['an allowed host with a wildcard', () => toConfig(loadConfig({ env: { HOOKWATCH_HTTP_ALLOWED_HOSTS: '*.example.com,http://foo.example.com' } })), /^http\.allowedHosts entry "\*\.example\.com" has a wildcard, which matches no name \(\* alone allows any\): list each name as a Host header gives it, a host name or IP address alone \(hookwatch\.example\.com, \[::1\]\), or with its port$/],
    ['an allowed host given as a URL', () => toConfig(loadConfig({ env: { HOOKWATCH_HTTP_ALLOWED_HOSTS: 'hookwatch.internal,http://foo.example.com' } })), /^http\.allowedHosts entry "http:\/\/foo\.example\.com" has a scheme: /],
    ['an allowed host with a path', () => toConfig(loadConfig({ env: {}, flags: { config: 'x.yaml' }, readFile: () => 'http:\n  allowedHosts: [foo.example.com/dashboard]\n' })), /^http\.allowedHosts entry "foo\.example\.com\/dashboard" has a path: /],
    ['a retention past 100 years', () => loadConfig({ env: { HOOKWATCH_RETENTION_EVENTS: '36501d' } }), /^environment HOOKWATCH_RETENTION_EVENTS: invalid value "36501d" for retention\.events: must be at most 36500d$/],
    ['a rollup retention far past 100 years', () => loadConfig({ env: {}, flags: { config: 'x.yaml' }, readFile: () => 'retention:\n  rollups: 100000000d\n' }), /^config file x\.yaml: invalid value "100000000d" for retention\.rollups: must be at most 36500d$/],
    ['a minute rollup retention past 100 years', () => loadConfig({ env: {}, flags: { 'retention-minute-rollups': '5300w' } }), /^flag --retention-minute-rollups: invalid value "5300w" for retention\.minuteRollups: must be at most 36500d$/],
    ['a duration too large to count', () => loadConfig({ env: { HOOKWATCH_RETENTION_EVENTS: `${'9'.repeat(400)}d` } }), /^environment HOOKWATCH_RETENTION_EVENTS: invalid value "9{400}d" for retention\.events: too large to count$/],
    ['a duration past 2^53 ms', () => loadConfig({ env: { HOOKWATCH_RETENTION_ROLLUPS: '1000000000000000000d' } }), /retention\.rollups: too large to count$/],
    ['a size too large to count', () => loadConfig({ env: { HOOKWATCH_FORWARD_QUEUE_MAX_BYTES: `${'9'.repeat(400)}GiB` } }), /forward\.queue\.maxBytes: too large to count$/],
    // YAML reads .inf, and a number too long for a double, as Infinity: JSON would name it null.
    ['an infinite number in a file, named as such', () => loadConfig({ env: {}, flags: { config: 'x.yaml' }, readFile: () => 'forward:\n  queue:\n    maxBytes: .inf\n' }), /^config file x\.yaml: invalid value Infinity for forward\.queue\.maxBytes: expected a size/],
    // Notifications link under it: without a scheme the links went out relative, and the host was not let in.
    ['an alerting.externalUrl without a scheme', () => loadConfig({ env: { HOOKWATCH_EXTERNAL_URL: 'hookwatch.example.com' } }), /^environment HOOKWATCH_EXTERNAL_URL: invalid value "hookwatch\.example\.com" for alerting\.externalUrl: expected an http:\/\/ or https:\/\/ URL such as https:\/\/hookwatch\.example\.com$/],
    ['an alerting.externalUrl of another scheme', () => loadConfig({ env: { HOOKWATCH_EXTERNAL_URL: 'ftp://hookwatch.example.com' } }), /alerting\.externalUrl: the scheme must be http or https, not ftp$/],
    ['an alerting.externalUrl with a port past 65535', () => loadConfig({ env: { HOOKWATCH_EXTERNAL_URL: 'https://hookwatch.example.com:99999' } }), /alerting\.externalUrl: expected an http:\/\/ or https:\/\/ URL/],
    ['a size out of range, in its units', () => loadConfig({ env: { HOOKWATCH_OTLP_MAX_REQUEST_BYTES: '2GiB' } }), /otlp\.maxRequestBytes: must be at most 1GiB$/],
    ['bad enum', () => loadConfig({ env: { HOOKWATCH_LOG_LEVEL: 'loud' } }), /expected one of debug, info, warn, error/],
    ['unknown flag', () => loadConfig({ env: {}, flags: { 'otlp-adr': 'x' } }), /unknown flag --otlp-adr/],
    ['mistyped flag', () => loadConfig({ env: {}, flags: { 'retention-event': '7d' } }), /unknown flag --retention-event; did you mean --retention-events\?/],
    ['two listeners on one port', () => toConfig(loadConfig({ env: { HOOKWATCH_OTLP_HTTP_ADDR: '127.0.0.1:4317' } })), /^otlp\.http\.addr \(127\.0\.0\.1:4317\) and otlp\.grpc\.addr \(127\.0\.0\.1:4317\) ask for the same port: each listener needs its own$/],
    ['a listener on every interface and one on loopback, same port', () => toConfig(loadConfig({ env: { HOOKWATCH_HTTP_ADDR: '0.0.0.0:4318' } })), /otlp\.http\.addr \(127\.0\.0\.1:4318\) and http\.addr \(0\.0\.0\.0:4318\) ask for the same port/],
  ];
  for (const [name, fn, message] of cases) {
    it(name, () => {
      expect(fn).toThrow(ConfigError);
      expect(fn).toThrow(message);
    });
  }

  it('takes allowed hosts in every form a Host header gives: a name, an address, with a port, absolute, and * alone', () => {
    const hosts = toConfig(loadConfig({ env: { HOOKWATCH_HTTP_ALLOWED_HOSTS: 'Hookwatch.Example.com, hw.internal:9318,[::1],10.0.0.7:9318,localhost.,*' } })).http.allowedHosts;
    expect(hosts).toEqual(['hookwatch.example.com', 'hw.internal:9318', '[::1]', '10.0.0.7:9318', 'localhost.', '*']);
  });

  // An IP address passes whether listed or not: a list naming one, as written before entries were checked, still starts.
  it('takes an IP address among the allowed hosts, an IPv6 one without its brackets too', () => {
    const hosts = toConfig(loadConfig({ env: { HOOKWATCH_HTTP_ALLOWED_HOSTS: 'localhost,127.0.0.1,::1,[fe80::1],::FFFF:10.0.0.7' } })).http.allowedHosts;
    expect(hosts).toEqual(['localhost', '127.0.0.1', '::1', '[fe80::1]', '::ffff:10.0.0.7']);
    expect(() => toConfig(loadConfig({ env: { HOOKWATCH_HTTP_ALLOWED_HOSTS: 'http://[::1]' } }))).toThrow(/^http\.allowedHosts entry "http:\/\/\[::1\]" has a scheme: /);
    expect(() => toConfig(loadConfig({ env: { HOOKWATCH_HTTP_ALLOWED_HOSTS: '::1/128' } }))).toThrow(/^http\.allowedHosts entry "::1\/128" has a path: /);
  });

  it('reads a boolean from a variable as the file reads it: true, True or TRUE (false alike), past the space around it', () => {
    for (const [text, value] of [['True', true], [' true ', true], ['TRUE', true], ['FALSE', false], ['False', false], ['1', true], ['0', false]] as const) {
      expect(toConfig(loadConfig({ env: { HOOKWATCH_FORWARD_ENRICH: text } })).forward.enrich, text).toBe(value);
    }
    for (const [text, value] of [['True', true], ['TRUE', true], ['False', false], ['FALSE', false]] as const) {
      expect(toConfig(loadConfig({ env: {}, flags: { config: 'x.yaml' }, readFile: () => `forward:\n  enrich: ${text}\n` })).forward.enrich, text).toBe(value);
    }
    // The file reads tRuE as a string, not a boolean: refused from a variable too, and quoted in the file as before.
    for (const text of ['yes', 'tRuE', 'fAlse']) {
      expect(() => loadConfig({ env: { HOOKWATCH_FORWARD_ENRICH: text } })).toThrow(`environment HOOKWATCH_FORWARD_ENRICH: invalid value "${text}" for forward.enrich: expected true or false`);
      expect(() => loadConfig({ env: {}, flags: { config: 'x.yaml' }, readFile: () => `forward:\n  enrich: ${text}\n` })).toThrow(`config file x.yaml: invalid value "${text}" for forward.enrich: expected true or false`);
      expect(() => loadConfig({ env: {}, flags: { config: 'x.yaml' }, readFile: () => `forward:\n  enrich: "${text}"\n` })).toThrow(`config file x.yaml: invalid value "${text}" for forward.enrich: expected true or false`);
    }
  });

  it('names the sizes of an otlp.maxInflightBytes below twice otlp.maxRequestBytes in units, as they are written', () => {
    expect(() => toConfig(loadConfig({ env: { HOOKWATCH_OTLP_MAX_INFLIGHT_BYTES: '200MiB', HOOKWATCH_OTLP_MAX_REQUEST_BYTES: '128MiB' } })))
      .toThrow(new ConfigError('otlp.maxInflightBytes (200MiB) must be at least twice otlp.maxRequestBytes (128MiB): set it to 256MiB or more'));
  });

  it('an empty section, its keys all commented out, sets nothing', () => {
    const loaded = loadConfig({ env: {}, flags: { config: 'x.yaml' }, readFile: () => 'alerting:\n  # receivers: []\nlog:\notlp:\n  http:\n' });
    expect(loaded.values).toEqual(loadConfig({ env: {} }).values);
    expect([...loaded.sources.values()].every((source) => source === 'default')).toBe(true);
  });

  it('listeners on port 0, or on one port of two different addresses, are not in each other\'s way', () => {
    expect(() => toConfig(loadConfig({ env: { HOOKWATCH_OTLP_HTTP_ADDR: '127.0.0.1:0', HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0', HOOKWATCH_HTTP_ADDR: '127.0.0.1:0' } }))).not.toThrow();
    expect(() => toConfig(loadConfig({ env: { HOOKWATCH_OTLP_GRPC_ADDR: '[::1]:4318' } }))).not.toThrow();
  });

  it('an unknown environment variable is a warning naming the nearest setting, not an error', () => {
    const loaded = loadConfig({ env: { HOOKWATCH_OTLP_HTTP_ADR: '127.0.0.1:1', HOOKWATCH_ZZZZZZZZZZZZZZZZZZZZZZZZZ: 'x' } });
    expect(loaded.warnings).toEqual(expect.arrayContaining([
      'environment: unknown variable HOOKWATCH_OTLP_HTTP_ADR is ignored; did you mean HOOKWATCH_OTLP_HTTP_ADDR?',
      'environment: unknown variable HOOKWATCH_ZZZZZZZZZZZZZZZZZZZZZZZZZ is ignored',
    ]));
    expect(toConfig(loaded).otlp.http.addr).toBe('127.0.0.1:4318');
  });

  it.each(['HOOKWATCH_PORT', 'HOOKWATCH_SERVICE_HOST', 'HOOKWATCH_SERVICE_PORT', 'HOOKWATCH_SERVICE_PORT_OTLP_HTTP', 'HOOKWATCH_PORT_4318_TCP',
    'HOOKWATCH_PORT_4318_TCP_ADDR', 'HOOKWATCH_PORT_53_UDP_PROTO', 'HOOKWATCH_DB_SERVICE_HOST', 'HOOKWATCH_DB_PORT_5432_TCP_PORT'])('ignores the Kubernetes service link %s silently', (name) => {
    const loaded = loadConfig({ env: { [name]: 'tcp://10.0.0.1:4318' } });
    expect(loaded.warnings).toEqual([]);
  });

  it('a bad rule or receiver is named by its key path and reason, the list it sits in not repeated', () => {
    const message = (yaml: string): string => {
      try {
        loadConfig({ env: { HOOKWATCH_CONFIG: 'x.yaml' }, readFile: () => yaml });
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as Error).message;
      }
      throw new Error('loaded');
    };
    const rules = 'alerting:\n  rules:\n    - { kind: persisted, name: first_rule }\n    - { kind: growth }\n    - { kind: blind }\n    - { kind: headroom, threshold: 7 }\n';
    expect(message(rules)).toBe('config file x.yaml: alerting.rules[3].threshold: must be between 0 and 1, a share: 0.07 for 7%');
    expect(message('alerting:\n  rules: { kind: persisted }\n')).toBe('config file x.yaml: alerting.rules: expected a list of rules');
    const receivers = 'alerting:\n  receivers:\n    - { name: ops, url: "https://hooks.example.com/T0/LeakPath77", signingSecret: "whsec_LeakSecret88", bearer: x }\n';
    expect(message(receivers)).toMatch(/^config file x\.yaml: alerting\.receivers\[0\]: unknown key "bearer" \(known: name, type, url, [^)]*\)$/);
    expect(message(receivers)).not.toMatch(/LeakPath77|LeakSecret88/);
  });

  // `--config` naming a device or a log file by mistake read it whole: /dev/zero until the machine ran out of
  // memory, and a large file blocked a running process for as long as it took to parse at a reload.
  it('refuses a config file larger than any configuration, reading no more of it than that', () => {
    const tmp = tempDir();
    try {
      const fits = join(tmp.dir, 'fits.yaml');
      writeFileSync(fits, `log:\n  level: debug\n${'#'.repeat(MAX_CONFIG_FILE_BYTES - 22)}\n`);
      expect(loadConfig({ env: {}, flags: { config: fits } }).values.get('log.level')).toBe('debug');
      const big = join(tmp.dir, 'big.yaml');
      writeFileSync(big, `log:\n  level: debug\n${'#'.repeat(MAX_CONFIG_FILE_BYTES)}\n`);
      for (const file of [big, '/dev/zero']) {
        expect(() => loadConfig({ env: {}, flags: { config: file } })).toThrow(ConfigError);
        expect(() => loadConfig({ env: {}, flags: { config: file } })).toThrow(`cannot read config file ${file}: it holds more than 4MiB, more than any configuration needs: is it the file meant?`);
      }
    } finally {
      tmp.cleanup();
    }
  });

  // A tag YAML does not define (`!ENV NAME` as MkDocs reads it, `!vault` as Ansible does) was a warning on stderr
  // quoting the line, the secret after the tag included, and the value was then taken as the bare text after it.
  it('refuses a YAML tag it does not read, naming its line, without the line itself or a warning quoting it', () => {
    const warning = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      const load = (text: string) => () => loadConfig({ env: {}, flags: { config: 'x.yaml' }, readFile: () => text });
      expect(load('log:\n  level: !ENV HOOKWATCH_LOG_LEVEL\n')).toThrow(ConfigError);
      expect(load('log:\n  level: !ENV HOOKWATCH_LOG_LEVEL\n')).toThrow(/^config file x\.yaml: the tag !ENV at line 2, column 10 is not one hookwatch reads: write the value, or \$\{env:NAME\} to take it from a variable$/);
      expect(load('http:\n  auth:\n    token: !vault LeakToken0123456789\n')).toThrow(/^config file x\.yaml: the tag !vault at line 3, column 12 is not one hookwatch reads: /);
      expect(load('http:\n  auth:\n    token: !vault LeakToken0123456789\n')).not.toThrow(/LeakToken/);
      // A directive it does not know is no more a warning left behind.
      expect(load('%YAML 9.9\n---\nlog: { level: info }\n')).toThrow(/^config file x\.yaml is not valid YAML or JSON: Unsupported YAML version 9\.9 at line 1, column 7$/);
      // The tags of YAML itself still read, and one on a value it does not fit is named so.
      expect(load('log:\n  level: !!str debug\n')().values.get('log.level')).toBe('debug');
      expect(load('http:\n  auth:\n    token: !!int LeakToken0123456789\n')).toThrow(/^config file x\.yaml: the value at line 3, column 12 does not fit its tag: it is not a !!int$/);
      expect(load('log:\n  level: !!timestamp 2020\n')).toThrow(/^config file x\.yaml: the value at line 2, column 10 does not fit its tag: !!timestamp expects a date, starting with yyyy-mm-dd$/);
      expect(warning).not.toHaveBeenCalled();
    } finally {
      warning.mockRestore();
    }
  });

  // The parser quotes the escape it refused (up to 8 characters after \U) and a block scalar's header whole.
  it.each([
    ['otlp:\n  ingestToken: "abc\\UZZSecretZZ123456"\n', 'Invalid escape sequence in a double-quoted string at line 2, column 20 (write \\\\ for a backslash, or single-quote the value)'],
    ['otlp:\n  ingestToken: |2SecretZZ123456\n   x\n', 'Block scalar header includes extra characters at line 2, column 18'],
  ])('refuses a file the YAML parser cannot read, naming the line, the column and what is wrong, not the text (%j)', (text, why) => {
    expect(() => loadConfig({ env: {}, flags: { config: 'x.yaml' }, readFile: () => text })).toThrow(new ConfigError(`config file x.yaml is not valid YAML or JSON: ${why}`));
  });

  // In a flow mapping, `{password:hunter2}` is one key "password:hunter2" with no value: "unknown key" and "not a
  // valid header name" quoted it whole, the secret after the colon included.
  it.each([
    ['http:\n  auth: {password:LeakSecret123}\n', 'unknown key "http.auth.password:…" (a value run into its key: write a space after the colon)'],
    ['alerting:\n  receivers:\n    - {name: ops, url:https://hooks.slack.com/services/T0/B0/LeakSecret123}\n', 'alerting.receivers[0]: unknown key "url:…" (a value run into its key: write a space after the colon)'],
    ['alerting:\n  receivers:\n    - {name: ops, url: "https://hooks.example.com/x", basicAuth: {username: ops, password:LeakSecret123}}\n', 'alerting.receivers[0].basicAuth: unknown key "password:…"'],
    ['alerting:\n  receivers:\n    - {name: ops, url: "https://hooks.example.com/x", tls: {keyFile:/run/LeakSecret123.pem}}\n', 'alerting.receivers[0].tls: unknown key "keyFile:…"'],
    ['alerting:\n  receivers:\n    - {name: ops, url: "https://hooks.example.com/x", headers: {Authorization:Bearer LeakSecret123}}\n', 'alerting.receivers[0].headers: "Authorization:…" (a value run into its key: write a space after the colon) is not a valid header name'],
    ['alerting:\n  otlp:\n    headers: {Authorization:Bearer LeakSecret123}\n', 'alerting.otlp.headers: "Authorization:…"'],
    ['forward:\n  headers: {Authorization:Bearer LeakSecret123}\n', 'for forward.headers: "Authorization:…" (a value run into its key: write a space after the colon) is not a valid header name'],
    // As name=value text, a value after the name's colon whose own part after "=" is no percent-encoding.
    ['forward:\n  headers: "Authorization:Basic LeakSecret123==%"\n', 'for forward.headers: "Authorization:…" (a value run into its key: write a space after the colon) is not a valid header name'],
  ])('never repeats a value run into its key: %j', (text, message) => {
    const load = () => toConfig(loadConfig({ env: {}, flags: { config: 'x.yaml' }, readFile: () => text }));
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(message);
    expect(load).not.toThrow(/LeakSecret/);
  });

  it('never repeats a secret value in an error', () => {
    let message = '';
    try {
      loadConfig({ env: {}, flags: { config: `${configs}secret-bad-type.yaml` }, readFile });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/otlp\.ingestToken/);
    expect(message).not.toContain('12345678');
  });
});

describe('the forwarding queue never shares a file with the store', () => {
  const { dir, cleanup } = tempDir('hookwatch-files-');
  afterAll(cleanup);
  const store = join(dir, 'hookwatch.db');
  writeFileSync(store, '');
  mkdirSync(join(dir, 'data'));
  symlinkSync(store, join(dir, 'link.db'));
  symlinkSync(join(dir, 'data'), join(dir, 'data-link'));
  // A link, relative to its folder, to a store not created yet: SQLite creates the file it points to.
  symlinkSync('later.db', join(dir, 'later-link.db'));
  /** Where a file is once links are followed: its folder exists. */
  const real = (file: string): string => join(realpathSync(dirname(file)), basename(file));
  const configured = (db: string, queue: string) => () => toConfig(loadConfig({ env: { HOOKWATCH_DB: db, HOOKWATCH_FORWARD_QUEUE_PATH: queue } }));

  it.each([
    ['the same path', store, store],
    ['a relative and an absolute path', store, relative(process.cwd(), store)],
    ['a symbolic link to the store', store, join(dir, 'link.db')],
    ['a path through a linked folder, the files not there yet', join(dir, 'data', 'h.db'), join(dir, 'data-link', 'h.db')],
    ['a symbolic link to the store, the file not there yet', join(dir, 'later.db'), join(dir, 'later-link.db')],
  ])('is refused naming both settings when they name one file: %s', (_how, db, queue) => {
    const load = configured(db, queue);
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(`forward.queue.path (${queue}) and db (${db}) name the same file (${real(db)}): the store and the forwarding queue each need a SQLite file of their own`);
  });

  it.each([
    ['-wal', (f: string) => `${f}-wal`],
    ['-shm', (f: string) => `${f}-shm`],
    ['-journal', (f: string) => `${f}-journal`],
    ['.lock', (f: string) => `${f}.lock`],
  ])('is refused when one is the %s file beside the other', (suffix, beside) => {
    expect(configured(store, beside(store))).toThrow(`forward.queue.path (${beside(store)}) and db (${store}) collide: forward.queue.path is the ${suffix} file of db (${real(beside(store))}): the store and the forwarding queue each need a SQLite file of their own, apart from the files beside it`);
    const queue = join(dir, 'queue.db');
    expect(configured(beside(queue), queue)).toThrow(`forward.queue.path (${queue}) and db (${beside(queue)}) collide: db is the ${suffix} file of forward.queue.path (${real(beside(queue))}): the store and the forwarding queue each need a SQLite file of their own, apart from the files beside it`);
  });

  it('takes two files of their own, a store on PostgreSQL, or one in memory', () => {
    expect(configured(store, join(dir, 'queue.db'))).not.toThrow();
    expect(configured(store, join(dir, 'hookwatch.db.queue'))).not.toThrow();
    expect(configured('postgres://u:pw12@127.0.0.1:5432/hookwatch', join(dir, 'hookwatch.db'))).not.toThrow();
    expect(configured(':memory:', ':memory:')).not.toThrow();
  });
});

describe('credentials in a URL setting never reach an error', () => {
  const main = fileURLToPath(new URL('../main.ts', import.meta.url));

  it('an alerting.otlp.endpoint that is not a URL stops serve with exit 2 naming the key, its password hidden', async () => {
    const err = await promisify(execFile)(process.execPath, [main, 'serve', '--db', ':memory:'], { env: { ...process.env, HOOKWATCH_ALERT_OTLP_ENDPOINT: 'http://u:AlertPW1@127.0.0.1:notaport' } }).catch((e: { code: number; stderr: string }) => e);
    expect((err as { code: number }).code).toBe(2);
    expect((err as { stderr: string }).stderr).toMatch(/alerting\.otlp\.endpoint: .*expected an http:\/\/ or https:\/\/ URL/);
    expect((err as { stderr: string }).stderr).not.toContain('AlertPW1');
    expect(() => loadConfig({ env: { HOOKWATCH_ALERT_OTLP_ENDPOINT: 'ftp://collector:4318' } })).toThrow(/alerting\.otlp\.endpoint: .*scheme must be http or https/);
    expect(loadConfig({ env: { HOOKWATCH_ALERT_OTLP_ENDPOINT: 'http://collector:4318' } }).values.get('alerting.otlp.endpoint')).toBe('http://collector:4318');
  });

  it('a URL setting given as a list or mapping in the file is refused without echoing it', () => {
    for (const [yaml, key] of [['db: [postgres://u:LeakPw11@h/db]\n', 'db'], ['forward:\n  endpoint: { u: "http://u:LeakPw11@h" }\n', 'forward.endpoint']] as const) {
      let message = '';
      try {
        loadConfig({ env: { HOOKWATCH_CONFIG: 'x.yaml' }, readFile: () => yaml });
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toContain(`for ${key}: expected a string`);
      expect(message).not.toContain('LeakPw11');
    }
  });

  it('forward.headers with a control character or a comma-split value is refused at start, the value unnamed', () => {
    expect(() => toConfig(loadConfig({ env: { HOOKWATCH_FORWARD_HEADERS: 'x-key=v\u0001secret-z' } }))).toThrow(/forward\.headers.*"x-key" contains a line break or control character/);
    let message = '';
    try {
      loadConfig({ env: { HOOKWATCH_FORWARD_HEADERS: 'a=b-value,broken-secret-part' } });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain('entry 2 of 2 has no "="');
    expect(message).not.toContain('broken-secret-part');
  });

  it('forward.headers that gRPC metadata cannot carry are refused at start with forward.protocol grpc, naming the header and not its value', () => {
    const forwarding = (protocol: string, headers: string | Record<string, string>): unknown => {
      const env = { HOOKWATCH_FORWARD_ENDPOINT: 'http://collector:4317', HOOKWATCH_FORWARD_PROTOCOL: protocol };
      if (typeof headers === 'string') return toConfig(loadConfig({ env: { ...env, HOOKWATCH_FORWARD_HEADERS: headers } })).forward.headers;
      const yaml = `forward:\n  headers:\n${Object.entries(headers).map(([k, v]) => `    ${k}: ${JSON.stringify(v)}\n`).join('')}`;
      return toConfig(loadConfig({ env: { ...env, HOOKWATCH_CONFIG: 'x.yaml' }, readFile: () => yaml })).forward.headers;
    };
    const refusal = (protocol: string, headers: string | Record<string, string>): string => {
      try {
        forwarding(protocol, headers);
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        expect((err as Error).message).not.toMatch(/s3cr3t/);
        return (err as Error).message;
      }
      throw new Error('accepted');
    };
    expect(refusal('grpc', 'x-token-bin=s3cr3t')).toBe('invalid value for forward.headers (forward.protocol grpc): "x-token-bin" ends in -bin, which in gRPC metadata marks a binary value; forward.headers carries text: name the header without -bin');
    expect(refusal('grpc', { 'X-Token-Bin': 's3cr3t' })).toMatch(/"x-token-bin" ends in -bin/);
    expect(refusal('grpc', 'x-key=s%C3%A9cr3t')).toBe('invalid value for forward.headers (forward.protocol grpc): the value of header "x-key" has characters gRPC metadata cannot carry (printable ASCII only)');
    expect(refusal('grpc', { 'x!key': 's3cr3t' })).toMatch(/"x!key" is not a valid gRPC metadata name/);
    expect(refusal('grpc', 'grpc-timeout=1000m')).toMatch(/"grpc-timeout": names starting with grpc- are reserved/);
    // A body sent without gzip would be labelled gzip: every request refused.
    expect(refusal('http/protobuf', 'content-encoding=gzip')).toMatch(/"content-encoding" is set by hookwatch or the transport/);
    // What HTTP carries fine stays allowed there.
    expect(forwarding('http/protobuf', 'x-token-bin=s3cr3t,x-key=s%C3%A9cr3t')).toEqual({ 'x-token-bin': 's3cr3t', 'x-key': 'sécr3t' });
    expect(forwarding('grpc', 'x-api-key=s3cr3t')).toEqual({ 'x-api-key': 's3cr3t' });
  });
});

describe('redaction', () => {
  it('the effective document hides the token and a database password', () => {
    const doc = effectiveDocument(loadConfig({ env: { HOOKWATCH_INGEST_TOKEN: 'hunter2-token-0a1b2c', HOOKWATCH_DB: 'postgres://hw:pa55word@db:5432/hookwatch' } }));
    const text = JSON.stringify(doc);
    expect(text).not.toContain('hunter2-token-0a1b2c');
    expect(text).not.toContain('pa55word');
    expect(text).toContain('<redacted>');
    expect(text).toContain('postgres://hw:<redacted>@db:5432/hookwatch');
  });

  it.each([
    ['alerting.externalUrl', 'HOOKWATCH_EXTERNAL_URL'],
    ['forward.endpoint', 'HOOKWATCH_FORWARD_ENDPOINT'],
    ['alerting.otlp.endpoint', 'HOOKWATCH_ALERT_OTLP_ENDPOINT'],
  ])('%s is printed with the credentials of its URL redacted, also past a leading space, and refused read back', (key, env) => {
    const printed = renderConfig(loadConfig({ env: { [env]: ' https://ops:Pw9-url-secret@hw.example.com:8443/?token=Tk9-query-secret' } }), 'yaml');
    expect(printed).not.toContain('Pw9-url-secret');
    expect(printed).not.toContain('Tk9-query-secret');
    expect(printed).toContain('https://ops:<redacted>@hw.example.com:8443/?token=<redacted>');
    expect(() => loadConfig({ env: {}, flags: { config: 'printed.yaml' }, readFile: () => printed })).toThrow(`config file printed.yaml: ${key} holds <redacted>`);
  });

  it.each([
    ['https:/admin:SuperSecretValue123456@h/'],
    ['https:admin:SuperSecretValue123456@h/'],
    ['https:\\\\admin:SuperSecretValue123456@h/'],
    ['HTTPS:///admin:SuperSecretValue123456@h/'],
  ])('a URL the parser reads credentials from without `//` (%s) is printed redacted, as YAML and JSON', (url) => {
    const loaded = loadConfig({ env: { HOOKWATCH_CONFIG: 'c.yaml' }, readFile: () => `forward:\n  endpoint: '${url}'\n`, flags: { 'alerting-otlp-endpoint': url, 'alerting-external-url': url } });
    for (const format of ['yaml', 'json'] as const) {
      const printed = renderConfig(loaded, format);
      expect(printed).not.toContain('SuperSecretValue123456');
      expect(printed.match(/https:\/\/admin:<redacted>@h\//g)).toHaveLength(3);
    }
    // The database's path is no URL and stays as it is, also one the parser would read as a scheme and a path.
    expect(effectiveDocument(loadConfig({ env: { HOOKWATCH_DB: 'C:\\data\\hookwatch.db' } }))['db']).toBe('C:\\data\\hookwatch.db');
  });

  it.each([
    ['http//admin:SuperSecretValue123456@h/'],
    ['admin:SuperSecretValue123456@host'],
    ['host/?token=SuperSecretValue123456'],
    ['collector:4318?token=SuperSecretValue123456'],
    ['https://admin:SuperSecretValue123456@h:99999/'],
  ])('a refused alerting.externalUrl or alerting.otlp.endpoint (%s) is not quoted, from a flag or at a reload', (url) => {
    const cases = [
      ['alerting-external-url', 'alerting.externalUrl', `alerting:\n  externalUrl: '${url}'\n`],
      ['alerting-otlp-endpoint', 'alerting.otlp.endpoint', `alerting:\n  otlp:\n    endpoint: '${url}'\n`],
    ] as const;
    for (const [flag, key, yaml] of cases) {
      const refused = (load: () => unknown): string => {
        try {
          load();
        } catch (err) {
          return (err as Error).message;
        }
        return 'accepted';
      };
      const why = `invalid value "<(unparsable URL )?redacted>" for ${key.replaceAll('.', '\\.')}: (expected an http:// or https:// URL|the scheme must be http or https)`;
      for (const message of [refused(() => loadConfig({ env: {}, flags: { [flag]: url } })), refused(() => loadConfig({ env: {}, flags: { config: 'c.yaml' }, readFile: () => yaml, reload: true }))]) {
        expect(message).toMatch(new RegExp(why));
        expect(message).not.toContain('SuperSecretValue123456');
      }
    }
  });

  // Nothing in these is a credential: the value is quoted as written (a URL as the parser reads it), so its writer
  // sees what is wrong with it, the scheme left out most often.
  it.each([
    ['ftp://example.com', 'ftp://example.com/'],
    ['hookwatch.example.com/dash', 'hookwatch.example.com/dash'],
    ['localhost:9318/hookwatch', 'localhost:9318/hookwatch'],
    ['https://hookwatch.example.com:99999/', 'https://hookwatch.example.com:99999/'],
    ['ftp://admin:SuperSecretValue123456@example.com/?api_key=SuperSecretValue123456', 'ftp://admin:<redacted>@example.com/?api_key=<redacted>'],
    ['ftp:admin:SuperSecretValue123456@h/', 'ftp://admin:<redacted>@h/'],
  ])('a refused alerting.externalUrl or alerting.otlp.endpoint (%s) is quoted as written, its credentials redacted', (url, shown) => {
    for (const [env, key, yaml] of [
      ['HOOKWATCH_EXTERNAL_URL', 'alerting.externalUrl', `alerting:\n  externalUrl: '${url}'\n`],
      ['HOOKWATCH_ALERT_OTLP_ENDPOINT', 'alerting.otlp.endpoint', `alerting:\n  otlp:\n    endpoint: '${url}'\n`],
    ] as const) {
      expect(() => loadConfig({ env: { [env]: url } })).toThrow(`environment ${env}: invalid value ${JSON.stringify(shown)} for ${key}: `);
      expect(() => loadConfig({ env: {}, flags: { config: 'c.yaml' }, readFile: () => yaml, reload: true })).toThrow(`config file c.yaml: invalid value ${JSON.stringify(shown)} for ${key}: `);
    }
  });

  it('`hookwatch config` prints the effective config with secrets redacted', async () => {
    const main = fileURLToPath(new URL('../main.ts', import.meta.url));
    const { stdout } = await promisify(execFile)(process.execPath, [main, 'config', '--json', '--db', '/tmp/x.db'], {
      env: { ...process.env, HOOKWATCH_INGEST_TOKEN: 'hunter2-token-0a1b2c' },
    });
    const doc = JSON.parse(stdout) as { db: string; otlp: { ingestToken: string } };
    expect(doc.db).toBe('/tmp/x.db');
    expect(doc.otlp.ingestToken).toBe('<redacted>');
    expect(stdout).not.toContain('hunter2-token-0a1b2c');
  });

  it('`hookwatch config` refuses what serve refuses, and shows the values other settings moved', async () => {
    const main = fileURLToPath(new URL('../main.ts', import.meta.url));
    const run = (env: Record<string, string>, ...args: string[]) =>
      promisify(execFile)(process.execPath, [main, 'config', ...args], { env: { ...process.env, ...env } }).catch((e: { code: number; stdout: string; stderr: string }) => e);
    const refused = (await run({ HOOKWATCH_PRIVACY_HASH: 'foo.bar' })) as { code: number; stderr: string };
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/privacy\.hash/);
    const yaml = (await run({ HOOKWATCH_OTLP_MAX_REQUEST_BYTES: '200MiB', HOOKWATCH_RETENTION_EVENTS: '1d' })) as { stdout: string };
    expect(yaml.stdout).toMatch(/maxInflightBytes: 400MiB # raised to twice otlp\.maxRequestBytes/);
    expect(yaml.stdout).toMatch(/minuteRollups: 1d # cut to retention\.events/);
    const json = JSON.parse(((await run({ HOOKWATCH_OTLP_MAX_REQUEST_BYTES: '200MiB' }, '--json')) as { stdout: string }).stdout) as { otlp: { maxInflightBytes: string } };
    expect(json.otlp.maxInflightBytes).toBe('400MiB');
  });

  it('a bad configuration makes the command exit 2 naming the key', async () => {
    const main = fileURLToPath(new URL('../main.ts', import.meta.url));
    const err = await promisify(execFile)(process.execPath, [main, 'serve'], { env: { ...process.env, HOOKWATCH_HTTP_ADDR: 'nowhere' } }).catch((e: { code: number; stderr: string }) => e);
    expect((err as { code: number }).code).toBe(2);
    expect((err as { stderr: string }).stderr).toMatch(/http\.addr/);
  });
});

describe('durations', () => {
  it('parses units and compounds', () => {
    expect(parseDuration('30s')).toBe(30_000);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('2d')).toBe(172_800_000);
    expect(parseDuration('1500')).toBe(1500);
    expect(parseDuration('soon')).toBeUndefined();
    expect(parseDuration('5x')).toBeUndefined();
  });

  // As Prometheus reads durations (and people who write its configuration expect): 1h1h was 2h, 30m1h 90m.
  it('takes units from the largest to the smallest, each at most once, as Prometheus does', () => {
    expect(parseDuration('1w2d3h4m5s6ms')).toBe(((((7 + 2) * 24 + 3) * 60 + 4) * 60 + 5) * 1000 + 6);
    expect(parseDuration('1s500ms')).toBe(1500);
    expect(parseDuration('1.5h')).toBe(5_400_000);
    for (const text of ['1h1h', '30m1h', '500ms1s', '1m1h30m', '5s5s', '1d1w']) expect(parseDuration(text), text).toBeUndefined();
  });

  it('refuses a unit given twice or out of order, naming the setting and the value, from every source and in a rule', async () => {
    expect(() => loadConfig({ env: { HOOKWATCH_RETENTION_EVENTS: '1h1h' } })).toThrow('environment HOOKWATCH_RETENTION_EVENTS: invalid value "1h1h" for retention.events: 1h1h gives a unit twice or out of order: write the units from the largest to the smallest, each at most once (1h30m)');
    expect(() => loadConfig({ env: {}, flags: { 'alerting-repeat-interval': '30m1h' } })).toThrow('flag --alerting-repeat-interval: invalid value "30m1h" for alerting.repeatInterval: 30m1h gives a unit twice or out of order');
    expect(() => loadConfig({ env: {}, flags: { config: 'x.yaml' }, readFile: () => 'shutdown: { timeout: 10s10s }\n' })).toThrow('config file x.yaml: invalid value "10s10s" for shutdown.timeout: 10s10s gives a unit twice or out of order');
    const rule = (window: string) => toConfig(loadConfig({ env: {}, flags: { config: 'x.yaml' }, readFile: () => `alerting:\n  rules:\n    - { kind: persisted_ratio, threshold: 0.25, window: ${window} }\n` }));
    expect(rule('1h30m').alerting.rules[0]?.windowMs).toBe(5_400_000);
    expect(() => rule('30m1h')).toThrow('config file x.yaml: alerting.rules[0].window: 30m1h gives a unit twice or out of order: write the units from the largest to the smallest, each at most once (1h30m)');
    const main = fileURLToPath(new URL('../main.ts', import.meta.url));
    const err = await promisify(execFile)(process.execPath, [main, 'config'], { env: { ...process.env, HOOKWATCH_RETENTION_EVENTS: '1h1h' } }).then(() => ({ code: 0, stderr: '' }), (e: { code: number; stderr: string }) => e);
    expect(err.code).toBe(2);
    expect(err.stderr).toContain('invalid value "1h1h" for retention.events: 1h1h gives a unit twice or out of order');
  });
});

describe('durations finer than a millisecond', () => {
  // Prometheus counts durations in whole milliseconds and takes no fractions; 1.5ms was read as 2ms without a word.
  it('reads a decimal that is a whole number of milliseconds, and no other', () => {
    expect(parseDuration('1.5s')).toBe(1500);
    expect(parseDuration('1.1s')).toBe(1100);
    expect(parseDuration('0.25s')).toBe(250);
    expect(parseDuration('1.50h')).toBe(5_400_000);
    expect(parseDuration('1h0.5s')).toBe(3_600_500);
    for (const text of ['1.5ms', '0.1ms', '0.5ms', '1.0005s', '1h0.5ms', '0.0000001h', '100us', '1s100ns']) expect(parseDuration(text), text).toBeUndefined();
  });

  it('refuses a fraction of a millisecond, naming the setting, the value and the nearest durations, from every source and in a rule', async () => {
    const why = 'is not a whole number of milliseconds, the smallest unit hookwatch counts (as Prometheus does)';
    expect(() => loadConfig({ env: { HOOKWATCH_ALERT_DELIVERY_INITIAL_BACKOFF: '1.5ms' } })).toThrow(`environment HOOKWATCH_ALERT_DELIVERY_INITIAL_BACKOFF: invalid value "1.5ms" for alerting.delivery.initialBackoff: 1.5ms ${why}: write 1ms or 2ms`);
    expect(() => loadConfig({ env: {}, flags: { 'forward-retry-initial-interval': '1.0005s' } })).toThrow(`flag --forward-retry-initial-interval: invalid value "1.0005s" for forward.retry.initialInterval: 1.0005s ${why}: write 1s or 1001ms`);
    // Rounded, 0.4ms was 0 and refused as under the 1ms minimum: a message about a value nobody wrote.
    expect(() => loadConfig({ env: {}, flags: { config: 'x.yaml' }, readFile: () => 'alerting: { delivery: { initialBackoff: 0.4ms } }\n' })).toThrow(`config file x.yaml: invalid value "0.4ms" for alerting.delivery.initialBackoff: 0.4ms ${why}: write 1ms`);
    expect(() => loadConfig({ env: { HOOKWATCH_FORWARD_TIMEOUT: '100us' } })).toThrow('environment HOOKWATCH_FORWARD_TIMEOUT: invalid value "100us" for forward.timeout: 100us is in a unit finer than hookwatch counts: the smallest is ms, as in Prometheus');
    const rule = (window: string) => toConfig(loadConfig({ env: {}, flags: { config: 'x.yaml' }, readFile: () => `alerting:\n  rules:\n    - { kind: persisted_ratio, threshold: 0.25, window: ${window} }\n` }));
    expect(rule('1.5h').alerting.rules[0]?.windowMs).toBe(5_400_000);
    expect(() => rule('1h0.5ms')).toThrow(`config file x.yaml: alerting.rules[0].window: 1h0.5ms ${why}: write 1h or 3600001ms`);
    const main = fileURLToPath(new URL('../main.ts', import.meta.url));
    const err = await promisify(execFile)(process.execPath, [main, 'config'], { env: { ...process.env, HOOKWATCH_ALERT_DELIVERY_INITIAL_BACKOFF: '2.5ms' } }).then(() => ({ code: 0, stderr: '' }), (e: { code: number; stderr: string }) => e);
    expect(err.code).toBe(2);
    expect(err.stderr).toBe(`hookwatch: configuration error: environment HOOKWATCH_ALERT_DELIVERY_INITIAL_BACKOFF: invalid value "2.5ms" for alerting.delivery.initialBackoff: 2.5ms ${why}: write 2ms or 3ms\n`);
  });
});

describe('sizes that are not a whole number of bytes', () => {
  // 1.3KiB is 1331.2 bytes: it was rounded to 1331 without a word.
  it('reads a decimal that is a whole number of bytes, and refuses the rest naming the setting, the value and the whole sizes either side', async () => {
    const loaded = loadConfig({ env: { HOOKWATCH_FORWARD_QUEUE_MAX_BYTES: '1.5MiB', HOOKWATCH_OTLP_MAX_REQUEST_BYTES: '1.1MB' } });
    expect(loaded.values.get('forward.queue.maxBytes')).toBe(1_572_864);
    expect(loaded.values.get('otlp.maxRequestBytes')).toBe(1_100_000);
    const why = 'is not a whole number of bytes';
    expect(() => loadConfig({ env: { HOOKWATCH_FORWARD_QUEUE_MAX_BYTES: '1.3KiB' } })).toThrow(`environment HOOKWATCH_FORWARD_QUEUE_MAX_BYTES: invalid value "1.3KiB" for forward.queue.maxBytes: 1.3KiB ${why}: write 1331 or 1332`);
    expect(() => loadConfig({ env: {}, flags: { 'otlp-max-request-bytes': '0.1MiB' } })).toThrow(`flag --otlp-max-request-bytes: invalid value "0.1MiB" for otlp.maxRequestBytes: 0.1MiB ${why}: write 104857 or 104858`);
    expect(() => loadConfig({ env: {}, flags: { config: 'x.yaml' }, readFile: () => 'sqlite: { cacheBytes: 1.5B }\n' })).toThrow(`config file x.yaml: invalid value "1.5B" for sqlite.cacheBytes: 1.5B ${why}: write 1 or 2`);
    const main = fileURLToPath(new URL('../main.ts', import.meta.url));
    const err = await promisify(execFile)(process.execPath, [main, 'config'], { env: { ...process.env, HOOKWATCH_SQLITE_CACHE_BYTES: '64.0000001MiB' } }).then(() => ({ code: 0, stderr: '' }), (e: { code: number; stderr: string }) => e);
    expect(err.code).toBe(2);
    expect(err.stderr).toBe(`hookwatch: configuration error: environment HOOKWATCH_SQLITE_CACHE_BYTES: invalid value "64.0000001MiB" for sqlite.cacheBytes: 64.0000001MiB ${why}: write 64MiB or 67108865\n`);
  });
});

describe('typed settings are read with a check, not a cast', () => {
  it('names a setting whose loaded value is not the type the typed config expects', () => {
    const wrongType = loadConfig({ env: {} });
    wrongType.values.set('otlp.maxRequestBytes', '1024');
    expect(() => toConfig(wrongType)).toThrow('setting otlp.maxRequestBytes: expected a number, got string');
    const missing = loadConfig({ env: {} });
    missing.values.delete('forward.enrich');
    expect(() => toConfig(missing)).toThrow('setting forward.enrich was not loaded');
  });

  it('accepts every value of every enum setting the schema allows', () => {
    const enums = SETTINGS.filter((s) => s.type === 'enum');
    expect(enums.length).toBeGreaterThan(3);
    for (const s of enums) {
      for (const value of s.values ?? []) {
        const loaded = loadConfig({ env: {} });
        loaded.values.set(s.key, value);
        // A mode that needs more settings (http.auth.mode basic) may refuse with a ConfigError, never a type error.
        try {
          toConfig(loaded);
        } catch (err) {
          expect(err, `${s.key}=${value}`).toBeInstanceOf(ConfigError);
        }
      }
    }
  });
});

describe('alerting.externalLabels', () => {
  const load = (text: string, env: NodeJS.ProcessEnv = {}) => toConfig(loadConfig({ env: { HOOKWATCH_CONFIG: 'hookwatch.yaml', ...env }, readFile: () => text }));

  it('reads a mapping in the file and name=value pairs in the environment, which take precedence', () => {
    expect(load('alerting:\n  externalLabels: { env: prod, region: eu-west-1, tier: 2 }\n').alerting.externalLabels).toEqual({ env: 'prod', region: 'eu-west-1', tier: '2' });
    expect(toConfig(loadConfig({ env: {} })).alerting.externalLabels).toEqual({});
    const fromEnv = load('alerting:\n  externalLabels: { env: prod }\n', { HOOKWATCH_ALERT_EXTERNAL_LABELS: 'env=staging, business_unit=payments%2Ccards' });
    expect(fromEnv.alerting.externalLabels).toEqual({ env: 'staging', business_unit: 'payments,cards' });
  });

  it('refuses a name that is no label name, or one hookwatch sets itself, naming it', () => {
    const refused = (labels: string): string => {
      try {
        load(`alerting:\n  externalLabels: ${labels}\n`);
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as Error).message;
      }
      throw new Error(`accepted ${labels}`);
    };
    expect(refused('{ env-name: prod }')).toContain('alerting.externalLabels: "env-name" is not a label name');
    expect(refused('{ __env: prod }')).toContain('"__env" is not a label name (letters, digits and _, starting with a letter or _, not __)');
    expect(refused('{ 1env: prod }')).toContain('"1env" is not a label name');
    expect(refused('{ severity: high }')).toContain('alerting.externalLabels.severity: hookwatch sets this label itself on its alerts (it sets alertname, severity, hook_event, hook_name, service_name, service_version, scope)');
    expect(refused('{ alertname: x }')).toContain('alerting.externalLabels.alertname: hookwatch sets this label itself');
    expect(refused('{ env: "" }')).toContain('alerting.externalLabels.env: expected a string of 1 to 256 characters');
    expect(refused('[env, prod]')).toContain('alerting.externalLabels: expected a mapping of label names to values');
    expect(() => load('', { HOOKWATCH_ALERT_EXTERNAL_LABELS: 'env=prod,hook_name=x' })).toThrow('alerting.externalLabels.hook_name: hookwatch sets this label itself');
    expect(() => load('', { HOOKWATCH_ALERT_EXTERNAL_LABELS: 'env=prod,staging' })).toThrow('alerting.externalLabels: expected name=value pairs separated by commas (entry 2 of 2 has no "=")');
    expect(() => load('', { HOOKWATCH_ALERT_EXTERNAL_LABELS: 'env=prod,env=staging' })).toThrow('alerting.externalLabels.env: given twice');
  });

  it('keeps a value written as a number as the file writes it, in `hookwatch config` too, as Prometheus keeps `version: 1.10`', async () => {
    const { dir, cleanup } = tempDir('hookwatch-label-text-');
    try {
      const file = join(dir, 'hookwatch.yaml');
      writeFileSync(file, [
        'alerting:',
        '  externalLabels: { version: 1.10, mask: 0x1F, limit: 1e3, zone: 010, shift: +1, share: .5, enabled: True, tier: 2, env: prod }',
        '  rules:',
        // The numeric settings beside them still read numbers.
        '    - { kind: persisted_ratio, threshold: .5, minExecutions: 0x10, labels: { release: 2.10, build: 0o17, team: web } }',
        'forward:',
        '  endpoint: http://127.0.0.1:4318',
        '  headers: { x-schema-version: 10.50, x-tenant: 0x1F00 }',
        '',
      ].join('\n'));
      const labels = { version: '1.10', mask: '0x1F', limit: '1e3', zone: '010', shift: '+1', share: '.5', enabled: 'True', tier: '2', env: 'prod' };
      const config = toConfig(loadConfig({ env: {}, flags: { config: file } }));
      expect(config.alerting.externalLabels).toEqual(labels);
      expect(config.alerting.rules.map((r) => [r.threshold, r.minExecutions, r.labels])).toEqual([[0.5, 16, { release: '2.10', build: '0o17', team: 'web' }]]);
      expect(config.forward.headers).toEqual({ 'x-schema-version': '10.50', 'x-tenant': '0x1F00' });
      const main = fileURLToPath(new URL('../main.ts', import.meta.url));
      const { stdout } = await promisify(execFile)(process.execPath, [main, 'config', '--json', '--config', file]);
      const printed = JSON.parse(stdout) as { alerting: { externalLabels: Record<string, string>; rules: { labels: Record<string, string> }[] } };
      expect(printed.alerting.externalLabels).toEqual(labels);
      expect(printed.alerting.rules[0]?.labels).toEqual({ release: '2.10', build: '0o17', team: 'web' });
    } finally {
      cleanup();
    }
  });

  it('refuses a name a rule sets too (its labels, its groupBy label): an alert never carries two values of one label', () => {
    expect(() => load(`alerting:\n  externalLabels: { team: platform }\n  rules:\n    - { kind: persisted, labels: { team: web } }\n`)).toThrow('alerting.externalLabels.team: alerting.rules[0] (persisted) sets this label too (its labels.team); an external label is the same on every alert hookwatch sends: rename one of them');
    expect(() => load(`dimensions: [organization.id]\nalerting:\n  externalLabels: { organization_id: acme }\n  rules:\n    - { kind: headroom, groupBy: organization.id }\n`)).toThrow('alerting.externalLabels.organization_id: alerting.rules[0] (headroom) sets this label too (its groupBy organization.id)');
    expect(load(`alerting:\n  externalLabels: { env: prod }\n  rules:\n    - { kind: persisted, labels: { team: web } }\n`).alerting.externalLabels).toEqual({ env: 'prod' });
  });
});
