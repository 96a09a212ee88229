/**
 * The hookwatch command as a new user meets it: the shape of `--help`, `serve --help` and `config`, errors for
 * unknown flags, commands and values, a port clash that names its setting, the start-up line with the dashboard
 * URL, and an old Node.js refused in words. Most cases run `main` in-process with captured output (a process per
 * case costs seconds on a busy machine); the bin wrapper, the start-up line and the old Node run as processes.
 */
import { spawn, spawnSync, type ChildProcess, type SpawnSyncReturns } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { loadConfig } from '../config/load.ts';
import { toConfig } from '../config/index.ts';
import { SETTINGS, flagName } from '../config/schema.ts';
import { nodeVersionProblem } from '../../bin/node-version.mjs';
import { main } from '../main.ts';
import { COMMANDS, defaultText, flagSettings } from './help.ts';
import { exposureWarnings } from './main.ts';
import { HAVE_OPENSSL, certAuthority, issue } from '../../test/support/certs.ts';
import { useTestServer } from '../../test/support/postgres/fixture.ts';
import { experimentalWarningsPreload } from '../../test/support/preloads.ts';
import { OLD_SCHEMA, OLD_SCHEMA_EVENTS, oldSchemaFile } from '../../test/support/old-schema.ts';
import { maxSizeRequest } from '../../../bench/lib/batch.ts';
import type { HooksResponse } from '../../../shared/src/api.ts';
import { JSON_THREAD_MIN_BYTES } from '../otlp/json-thread.ts';
import { MIGRATIONS } from '../store/sqlite/index.ts';
import { postOtlp } from '../../test/helpers.ts';
import { queryOnce } from '../../test/support/postgres/server.ts';
import { request as httpsRequest } from 'node:https';

const BIN = fileURLToPath(new URL('../../bin/hookwatch.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'hookwatch-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Only the variables a user would have: no HOOKWATCH_* from the test runner's environment. */
function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { PATH: process.env['PATH'] ?? '', HOME: dir };
  return { ...out, ...extra };
}

interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

/** Runs the command in-process, as the bin wrapper would, with only `extra` as HOOKWATCH_* variables. */
async function hookwatch(args: string[], extra: Record<string, string> = {}): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const status = await main(args, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t), env: env(extra), cwd: dir });
  return { status, stdout, stderr };
}

/** The real thing: a process started through collector/bin/hookwatch.mjs. */
function hookwatchProcess(args: string[], extra: Record<string, string> = {}): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', env: env(extra), cwd: dir, timeout: 20_000 });
}

function lines(text: string): string[] {
  return text.split('\n');
}

/** The warning for the rules of docs/alerting.md's example, which list persisted, headroom and silence. */
const RULES_WARNING = 'alerting.rules lists rules, which replace the default ones: the default rules growth, blind, never_completed and hook_limit are off; to keep them, add each as an item of alerting.rules: { kind: growth }, { kind: blind }, { kind: never_completed }, { kind: hook_limit }';

/** What a first start logged before it failed, having made its new SQLite database (the schema's line). */
const NEW_DATABASE = 'sqlite schema migrated';

/** stderr's lines, a JSON log line by its message. */
function stderrLines(stderr: string): string[] {
  return stderr.split('\n').filter((l) => l !== '').map((l) => (l.startsWith('{') ? String((JSON.parse(l) as { msg?: unknown }).msg) : l));
}

/** What a terminal-width help must never have: long lines, a flag run into its variable, raw milliseconds. */
function expectReadable(text: string): void {
  for (const line of lines(text)) expect(line.length, line).toBeLessThanOrEqual(100);
  expect(text).not.toMatch(/[A-Za-z>]HOOKWATCH_/);
  expect(text).not.toMatch(/default[^\]\n]*\b\d{7,}\b/);
}

describe('hookwatch --help', () => {
  it('lists every command with a line saying what it does, then the global flags, and points at per-command help', async () => {
    const r = hookwatchProcess(['--help']);
    expect(r.status).toBe(0);
    const out = r.stdout;
    expectReadable(out);
    expect(lines(out)[0]).toMatch(/^hookwatch \d+\.\d+\.\d+: tells a team when their Claude Code hooks stop reaching the model\.$/);
    const sections = lines(out).filter((l) => /^[A-Z][a-z]+:$/.test(l));
    expect(sections).toEqual(['Usage:', 'Commands:', 'Flags:']);
    const commands = out.slice(out.indexOf('Commands:\n') + 10, out.indexOf('\n\nFlags:'));
    expect(lines(commands).map((l) => /^ {2}([a-z]+) {3,}\S/.exec(l)?.[1])).toEqual(COMMANDS.map((c) => c.name));
    expect(out).toContain('Run "hookwatch <command> --help"');
    expect((await hookwatch(['help'])).stdout).toBe(out);
    expect((await hookwatch(['help', '--help'])).stdout).toBe(out);
  });

  it('says what each exit status means, and the real command exits with them', () => {
    const help = hookwatchProcess(['--help']).stdout.replace(/\n/g, ' ');
    expect(help).toContain('Exit status: 0 done');
    expect(help).toContain('1 a failure: serve could not start');
    expect(help).toContain('2 bad usage: an unknown command or flag, a bad value, a configuration serve would refuse');
    const cases: [string[], Record<string, string>, number][] = [
      [['version'], {}, 0],
      [['backup', '--to', join(dir, 'copy.db'), '--db', join(dir, 'absent.db')], {}, 1],
      [['restore', '--from', join(dir, 'absent-backup.db'), '--db', join(dir, 'absent.db')], {}, 1],
      [['restore'], {}, 2],
      [['nonsense'], {}, 2],
      [['config', '--bogus'], {}, 2],
      [['config', '--retention-events', 'forever'], {}, 2],
      [['config'], { HOOKWATCH_CONFIG: join(dir, 'absent.yaml') }, 2],
    ];
    for (const [args, extra, status] of cases) expect(hookwatchProcess(args, extra).status, args.join(' ')).toBe(status);
  });

  it('--help and serve --help say how a running serve reloads its configuration, not only how it stops', async () => {
    for (const args of [['--help'], ['serve', '--help']]) {
      const out = (await hookwatch(args)).stdout.replace(/\n/g, ' ');
      expect(out, args.join(' ')).toContain('SIGHUP (kill -HUP <pid>) or POST /-/reload reads the configuration again');
      expect(out, args.join(' ')).toContain('applies the settings docs/configuration.md marks reloadable');
    }
    expect((await hookwatch(['serve', '--help'])).stdout.replace(/\n/g, ' ')).toContain('Runs until SIGTERM or SIGINT, then drains and exits 0');
  });

  it('serve --help lists every setting flag with its description, human default, variable and file key', async () => {
    const r = await hookwatch(['serve', '--help']);
    expect(r.status).toBe(0);
    const out = r.stdout;
    expectReadable(out);
    expect(out).not.toBe((await hookwatch(['--help'])).stdout);
    expect(lines(out).slice(0, 2)).toEqual(['Usage:', '  hookwatch serve [flags]']);
    expect((await hookwatch(['help', 'serve'])).stdout).toBe(out);
    const all = lines(out);
    for (const s of flagSettings()) {
      const at = all.findIndex((l) => l.startsWith(`  ${flagName(s.key)} <`));
      expect(at, flagName(s.key)).toBeGreaterThan(0);
      // The flag line, then description lines indented under it, the last carrying the facts.
      const block: string[] = [];
      for (let i = at + 1; i < all.length && all[i]?.startsWith('          '); i++) block.push((all[i] as string).trim());
      const text = block.join(' ');
      expect(text, s.key).toContain(s.description.split(' ').slice(0, 4).join(' '));
      expect(text, s.key).toContain(`[default: ${defaultText(s)}]`);
      if (s.env) expect(text, s.key).toContain(`[env: ${s.env}]`);
      expect(text, s.key).toContain(`[file: ${s.key}]`);
    }
    // The defaults people write, not what the schema stores.
    expect(out).toMatch(/--retention-events <duration>\n(?: {10}.*\n)*? {10}.*\[default: 30d\]/);
    expect(out).toMatch(/--otlp-max-request-bytes <size>\n(?: {10}.*\n)*? {10}.*\[default: 20MiB\]/);
    expect(out).toMatch(/\[default: 10s\]/);
  });

  it('config --help is its own, with --json', async () => {
    const r = await hookwatch(['config', '--help']);
    expect(r.status).toBe(0);
    expectReadable(r.stdout);
    expect(lines(r.stdout).slice(0, 2)).toEqual(['Usage:', '  hookwatch config [--json] [flags]']);
    expect(r.stdout).toContain('  --json\n');
    expect((await hookwatch(['--help', 'config'])).stdout).toBe(r.stdout);
  });

  it('version --help is its own, saying what version prints, not the list of commands', async () => {
    const r = await hookwatch(['version', '--help']);
    expect(r.status).toBe(0);
    expectReadable(r.stdout);
    expect(lines(r.stdout).slice(0, 2)).toEqual(['Usage:', '  hookwatch version']);
    expect(r.stdout).toContain('as "hookwatch --version" does');
    expect(r.stdout).not.toContain('Commands:');
    expect((await hookwatch(['help', 'version'])).stdout).toBe(r.stdout);
    expect((await hookwatch(['--help', 'version'])).stdout).toBe(r.stdout);
  });

  it('restore --help is its own: --from, what it keeps and what it refuses', async () => {
    const r = await hookwatch(['restore', '--help']);
    expect(r.status).toBe(0);
    expectReadable(r.stdout);
    expect(lines(r.stdout).slice(0, 2)).toEqual(['Usage:', '  hookwatch restore --from <file> [flags]']);
    expect(r.stdout).toContain('  --from <file>\n');
    expect(r.stdout.replace(/\n/g, ' ')).toContain('<db>.replaced-<UTC time>');
    expect((await hookwatch(['help', 'restore'])).stdout).toBe(r.stdout);
  });
});

describe('hookwatch config', () => {
  it('prints a config file hookwatch reads back: units for durations and sizes, sources noted, secrets redacted', async () => {
    const r = await hookwatch(['config', '--retention-events', '7d'], { HOOKWATCH_DB: join(dir, 'x.db'), HOOKWATCH_INGEST_TOKEN: 'tok-very-secret-1234' });
    expect(r.status, r.stderr).toBe(0);
    const out = r.stdout;
    expect(lines(out)[0]).toMatch(/^# hookwatch effective configuration \(secrets redacted\); a valid config file once the redacted secrets are put back$/);
    expect(out).toMatch(/^ {2}maxRequestBytes: 20MiB$/m);
    expect(out).toMatch(/^ {2}rollups: 400d$/m);
    expect(out).toMatch(/^ {2}events: 1w # from --retention-events$/m);
    expect(out).toContain(`db: ${join(dir, 'x.db')} # from HOOKWATCH_DB`);
    expect(out).toMatch(/^ {2}ingestToken: <redacted> # from HOOKWATCH_INGEST_TOKEN$/m);
    expect(out).not.toContain('tok-very-secret-1234');
    expect(out).not.toMatch(/:\s+\d{7,}$/m);
    // Read back as a config file, every duration and size comes out as the value in effect.
    const file = join(dir, 'printed.yaml');
    writeFileSync(file, out.replace('ingestToken: <redacted>', 'ingestToken: ""'));
    expect(out.replace('ingestToken: <redacted>', '')).not.toContain('<redacted>');
    const loaded = loadConfig({ flags: { config: file }, env: {} });
    const direct = loadConfig({ flags: { 'retention-events': '7d' }, env: { HOOKWATCH_DB: join(dir, 'x.db') } });
    for (const s of SETTINGS.filter((x) => x.type === 'duration' || x.type === 'bytes')) expect(loaded.values.get(s.key), s.key).toBe(direct.values.get(s.key));
    expect(loaded.values.get('db')).toBe(join(dir, 'x.db'));
    const json = JSON.parse((await hookwatch(['config', '--json'])).stdout) as { retention: { events: string } };
    expect(json.retention.events).toBe('30d');
    expect(parseYaml(out)).toBeTruthy();
  });

  it('prints a file that hookwatch starts with: every check serve makes passes, TLS sections left off included', async () => {
    // The TLS sections print their defaults (minVersion 1.2, reloadInterval 30s) with no certificate or endpoint
    // beside them; written back, they are the defaults, not settings that would apply to nothing.
    for (const format of ['yaml', 'json'] as const) {
      const printed = await hookwatch(format === 'json' ? ['config', '--json'] : ['config'], { HOOKWATCH_DB: join(dir, 'x.db') });
      expect(printed.status, printed.stderr).toBe(0);
      expect(printed.stdout).toMatch(/minVersion/);
      const file = join(dir, `printed-defaults.${format}`);
      writeFileSync(file, printed.stdout);
      const again = await hookwatch(['config', '--config', file]);
      expect(again.stderr).toBe('');
      expect(again.status).toBe(0);
    }
  });

  it('privacy.drop takes an attribute privacy.hash lists by default, and says so; set in both it is refused', async () => {
    for (const format of ['yaml', 'json'] as const) {
      const printed = await hookwatch(format === 'json' ? ['config', '--json'] : ['config'], { HOOKWATCH_PRIVACY_DROP: 'user.email' });
      expect(printed.status, printed.stderr).toBe(0);
      const doc = (format === 'json' ? JSON.parse(printed.stdout) : parseYaml(printed.stdout)) as { privacy: { hash: string[]; drop: string[] } };
      expect(doc.privacy).toMatchObject({ hash: [], drop: ['user.email'] });
      if (format === 'yaml') expect(printed.stdout).toContain('# privacy.drop takes the attributes it lists');
      const file = join(dir, `privacy-drop.${format}`);
      writeFileSync(file, printed.stdout);
      expect((await hookwatch(['config', '--config', file])).status).toBe(0);
    }
    const both = await hookwatch(['config'], { HOOKWATCH_PRIVACY_HASH: 'user.email', HOOKWATCH_PRIVACY_DROP: 'user.email' });
    expect(both.status).toBe(2);
    expect(both.stderr).toContain('"user.email" is in both privacy.hash and privacy.drop; choose one');
  });

  it('config refuses a silence rule whose after is not shorter than its window, exit 2, naming the rule and both values', async () => {
    const file = join(dir, 'silence-after-window.yaml');
    writeFileSync(file, 'alerting:\n  rules:\n    - { kind: silence, after: 8d }\n');
    const r = await hookwatch(['config', '--config', file]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/alerting\.rules\[0\] \(silence\): after 8d is not shorter than window 7d \(the default\): /);
  });

  it('a rule list that leaves out default rule kinds is printed with one warning naming them and the YAML that keeps them', async () => {
    // The example of docs/alerting.md (Receivers): three rules, so growth, blind, never_completed and hook_limit are off.
    const file = join(dir, 'rules-example.yaml');
    writeFileSync(file, 'alerting:\n  rules:\n    - { kind: persisted, window: 1h, labels: { source: hookwatch } }\n    - { kind: headroom, threshold: 0.85, for: 10m }\n    - { kind: silence, scope: feed, after: 2h }\n');
    const r = await hookwatch(['config', '--config', file]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toBe(`hookwatch: warning: ${RULES_WARNING}\n`);
    // The YAML the warning gives, added to the list, keeps every default kind on, and nothing is warned of.
    const kept = join(dir, 'rules-example-kept.yaml');
    writeFileSync(kept, `${readFileSync(file, 'utf8')}${['growth', 'blind', 'never_completed', 'hook_limit'].map((k) => `    - { kind: ${k} }\n`).join('')}`);
    const again = await hookwatch(['config', '--config', kept]);
    expect(again.stderr).toBe('');
    expect(again.status).toBe(0);
    // `rules: []` turns the rules off on purpose: nothing to warn of.
    const none = join(dir, 'rules-none.yaml');
    writeFileSync(none, 'alerting:\n  rules: []\n');
    expect((await hookwatch(['config', '--config', none])).stderr).toBe('');
  });

  // forward.endpoint was checked as a URL only by serve, as forwarding started: `config` printed such a file as
  // valid, and a reload took it as a setting for the next restart, which then failed.
  it.each([
    ['htps://collector:4318', 'the scheme must be http or https, not htps'],
    ['collector:4318', 'the scheme must be http or https, not collector'],
    ['https://hw:LeakPw99@collector:99999/', '"<unparsable endpoint>" is not a URL; expected e.g. http://collector:4318'],
  ])('refuses a forward.endpoint serve refuses (%s), as serve does', async (endpoint, why) => {
    const r = await hookwatch(['config'], { HOOKWATCH_FORWARD_ENDPOINT: endpoint });
    expect(r.stderr).toBe(`hookwatch: configuration error: invalid value for forward.endpoint: ${why}\n`);
    expect(r.status).toBe(2);
  });

  it('names a value from the environment with its bidi controls written out: the error reads as its bytes', () => {
    const r = hookwatchProcess(['config'], { HOOKWATCH_LOG_LEVEL: 'warn\u202E\nofni' });
    expect(r.stderr).toBe('hookwatch: configuration error: environment HOOKWATCH_LOG_LEVEL: invalid value "warn\\u202e\\nofni" for log.level: expected one of debug, info, warn, error\n');
    expect(r.status).toBe(2);
  });

  it('writes out the control characters, terminal escapes and bidi controls of values and of a file name, as escapes the YAML and JSON read back', () => {
    const file = join(dir, 'conf\u202Elmay.yaml');
    writeFileSync(file, 'forward:\n  queue:\n    path: "./q\\u202egnp.db\\x1b]0;pwned\\x07"\n');
    const db = join(dir, 'a\u202Egnp.db\u001b[2J\u007f\u2028\u{E0041}');
    const queue = './q\u202Egnp.db\u001b]0;pwned\u0007';
    const args = ['config', '--config', file, '--dimensions', 'team,x\u2066y'];
    const unseen = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

    const yaml = hookwatchProcess(args, { HOOKWATCH_DB: db });
    expect(yaml.stderr).toBe('');
    expect(yaml.status).toBe(0);
    expect(yaml.stdout.replaceAll('\n', '')).not.toMatch(unseen);
    expect(yaml.stdout).toContain(`\ndb: "${dir}/a\\u202egnp.db\\e[2J\\u007f\\u2028\\U000e0041" # from HOOKWATCH_DB\n`);
    expect(yaml.stdout).toContain(`\n    path: "./q\\u202egnp.db\\e]0;pwned\\a" # from config file ${dir}/conf\\u202elmay.yaml\n`);
    expect(yaml.stdout).toContain('\n  - "x\\u2066y"\n');
    // Written back, the file holds the same values.
    const printed = join(dir, 'printed-escaped.yaml');
    writeFileSync(printed, yaml.stdout);
    const again = loadConfig({ flags: { config: printed }, env: {} });
    expect(again.values.get('db')).toBe(db);
    expect(again.values.get('forward.queue.path')).toBe(queue);
    expect(again.values.get('dimensions')).toEqual(['team', 'x\u2066y']);

    const json = hookwatchProcess([...args, '--json'], { HOOKWATCH_DB: db });
    expect(json.stderr).toBe('');
    expect(json.status).toBe(0);
    expect(json.stdout.replaceAll('\n', '')).not.toMatch(unseen);
    expect(json.stdout).toContain(`\n  "db": "${dir}/a\\u202egnp.db\\u001b[2J\\u007f\\u2028\\udb40\\udc41",\n`);
    const parsed = JSON.parse(json.stdout) as { db: string; dimensions: string[]; forward: { queue: { path: string } } };
    expect(parsed.db).toBe(db);
    expect(parsed.forward.queue.path).toBe(queue);
    expect(parsed.dimensions).toEqual(['team', 'x\u2066y']);
  });

  it('prints a PostgreSQL URL to a Unix socket (no host, the socket folder in ?host=) with only its password redacted', async () => {
    const r = await hookwatch(['config'], { HOOKWATCH_DB: 'postgres://hw:Sock3t-secret@/hookwatch?host=/var/run/postgresql' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('\ndb: postgres://hw:<redacted>@/hookwatch?host=/var/run/postgresql # from HOOKWATCH_DB\n');
    expect(r.stdout).not.toContain('Sock3t-secret');
    // Refused for a password too short to scrub from logs, the URL shown as above.
    const short = await hookwatch(['config'], { HOOKWATCH_DB: 'postgres://hw:Q7z@/hookwatch?host=/var/run/postgresql' });
    expect(short.stderr).toBe('hookwatch: configuration error: environment HOOKWATCH_DB: invalid value "postgres://hw:<redacted>@/hookwatch?host=/var/run/postgresql" for db: its password is shorter than 4 characters, too short to be kept out of logs: use a longer one\n');
    expect(short.status).toBe(2);
  });

  it('takes flags before the command as after it, as git and kubectl do', async () => {
    const file = join(dir, 'before-command.yaml');
    writeFileSync(file, 'retention:\n  events: 9d\n');
    const after = await hookwatch(['config', '--config', file, '--json']);
    expect(after.status, after.stderr).toBe(0);
    expect((JSON.parse(after.stdout) as { retention: { events: string } }).retention.events).toBe('9d');
    for (const args of [['--config', file, 'config', '--json'], [`--config=${file}`, '--json', 'config']]) {
      const r = await hookwatch(args);
      expect(r, args.join(' ')).toEqual(after);
    }
  });
});

describe('mistakes on the command line', () => {
  it.each([
    [['--bogus'], 'hookwatch: unknown flag --bogus\nRun "hookwatch --help" for the flags.'],
    [['serve', '--retention-event', '7d'], 'hookwatch: unknown flag --retention-event (did you mean --retention-events?)\nRun "hookwatch serve --help" for the flags.'],
    [['srve'], 'hookwatch: unknown command "srve" (did you mean serve?)\nRun "hookwatch --help" for the commands.'],
    [['help', 'gaurd'], 'hookwatch: unknown command "gaurd" (did you mean guard?)\nRun "hookwatch --help" for the commands.'],
    [['config', '--retention-events', '7x'], 'hookwatch: flag --retention-events: invalid value "7x" for retention.events: expected a duration such as 30s, 5m, 24h or 30d\nRun "hookwatch config --help" for the flags.'],
    [['serve', '--db'], 'hookwatch: flag --db needs a value\nRun "hookwatch serve --help" for the flags.'],
    [['serve', '--db', '--json'], 'hookwatch: flag --db needs a value\nRun "hookwatch serve --help" for the flags.'],
    [['config', '--retention-events=7x'], 'hookwatch: flag --retention-events: invalid value "7x" for retention.events: expected a duration such as 30s, 5m, 24h or 30d\nRun "hookwatch config --help" for the flags.'],
    [['config', '--help=yes'], 'hookwatch: flag --help takes no value\nRun "hookwatch config --help" for the flags.'],
    [['config', 'extra'], 'hookwatch: unexpected argument "extra"\nRun "hookwatch config --help" for the flags.'],
    // A command after flags is taken as given first; a mistyped one is named.
    [['--db', 'x.db', 'confg'], 'hookwatch: unexpected argument "confg" (did you mean config?)\nRun "hookwatch --help" for the flags.'],
    [['--db', 'x.db', 'config', 'extra'], 'hookwatch: unexpected argument "extra"\nRun "hookwatch config --help" for the flags.'],
    [['--retention-events', '7x', 'config'], 'hookwatch: flag --retention-events: invalid value "7x" for retention.events: expected a duration such as 30s, 5m, 24h or 30d\nRun "hookwatch config --help" for the flags.'],
    [['config', '--', '--db', 'x'], 'hookwatch: unexpected argument "--db"\nRun "hookwatch config --help" for the flags.'],
    // A port past 65535 is named as such, not as a value that is no host:port; a port alone gets the forms to write.
    [['serve', '--http-addr', '127.0.0.1:99999'], 'hookwatch: flag --http-addr: invalid value "127.0.0.1:99999" for http.addr: port 99999 is out of range: a port is 0 to 65535 (0 picks a free one)\nRun "hookwatch serve --help" for the flags.'],
    [['serve', '--otlp-http-addr', '4318'], 'hookwatch: flag --otlp-http-addr: invalid value "4318" for otlp.http.addr: expected host:port, not a port alone: 127.0.0.1:4318 (this machine only) or 0.0.0.0:4318 (every address)\nRun "hookwatch serve --help" for the flags.'],
    [['check', '--bogus'], 'hookwatch check: unknown flag --bogus\nRun "hookwatch check --help" for usage.'],
    [['check', '--show-ouptut', '--', 'true'], 'hookwatch check: unknown flag --show-ouptut (did you mean --show-output?)\nRun "hookwatch check --help" for usage.'],
  ])('%j says what is wrong and exits 2', async (args, message) => {
    const r = await hookwatch(args);
    expect(r.stderr).toBe(`${message}\n`);
    expect(r.status).toBe(2);
  });
});

describe('a mistyped environment variable', () => {
  it.each([
    // Words left out: every setting that has them, in order, is named, not the one a few letters away.
    ['HOOKWATCH_OTLP_ADDR', 'HOOKWATCH_OTLP_HTTP_ADDR or HOOKWATCH_OTLP_GRPC_ADDR'],
    ['HOOKWATCH_RETENTION', 'HOOKWATCH_RETENTION_EVENTS, HOOKWATCH_RETENTION_MINUTE_ROLLUPS or HOOKWATCH_RETENTION_ROLLUPS'],
    // A typo within a word: the nearest name.
    ['HOOKWATCH_HTTP_ADR', 'HOOKWATCH_HTTP_ADDR'],
    ['HOOKWATCH_LOGLEVEL', 'HOOKWATCH_LOG_LEVEL'],
  ])('%s is a warning naming %s', async (name, meant) => {
    const r = await hookwatch(['config'], { [name]: '7d' });
    expect(r.stderr).toBe(`hookwatch: warning: environment: unknown variable ${name} is ignored; did you mean ${meant}?\n`);
    expect(r.status).toBe(0);
  });

  it('hookwatch guard\'s variables, exported in the same shell, are no warning', async () => {
    const guard = { HOOKWATCH_GUARD_REPORT: 'http://127.0.0.1:4318', HOOKWATCH_GUARD_BUDGET: '8000', HOOKWATCH_GUARD_DIR: dir, HOOKWATCH_GUARD_KEEP_FOR: '7d', HOOKWATCH_GUARD_KEEP_SIZE: '1GiB', HOOKWATCH_GUARD_KILL_GRACE: '1s', HOOKWATCH_GUARD_NO_REPORT: '1', HOOKWATCH_GUARD_SPILL_BYTES: '1024' };
    const r = await hookwatch(['config'], guard);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    // A name a letter away from one of them is still a typo.
    const typo = await hookwatch(['config'], { HOOKWATCH_GUARD_BUDGT: '8000' });
    expect(typo.stderr).toBe('hookwatch: warning: environment: unknown variable HOOKWATCH_GUARD_BUDGT is ignored; did you mean HOOKWATCH_GUARD_BUDGET?\n');
  });
});

describe('a rule threshold written as a percentage', () => {
  it.each([['headroom', 85, '0.85 for 85%'], ['persisted_ratio', 5, '0.05 for 5%'], ['headroom', 33.3, '0.333 for 33.3%']])('(%s, %s) is refused with the share it stands for', async (kind, threshold, meant) => {
    const file = join(dir, `threshold-${kind}.yaml`);
    writeFileSync(file, `alerting:\n  rules:\n    - { kind: ${kind}, threshold: ${threshold} }\n`);
    const r = await hookwatch(['config', '--config', file]);
    expect(r.stderr).toBe(`hookwatch: configuration error: config file ${file}: alerting.rules[0].threshold: must be between 0 and 1, a share: ${meant}\n`);
    expect(r.status).toBe(2);
  });
});

describe('hookwatch serve', () => {
  const holders: Server[] = [];
  afterAll(() => {
    for (const h of holders) h.close();
  });

  /** A loopback port held by another listener. */
  async function heldPort(): Promise<number> {
    const s = createServer();
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    holders.push(s);
    return (s.address() as { port: number }).port;
  }

  const base = (): Record<string, string> => ({
    HOOKWATCH_DB: join(mkdtempSync(join(dir, 'db-')), 'h.db'),
    HOOKWATCH_FORWARD_QUEUE_PATH: join(dir, 'fq.db'),
    HOOKWATCH_OTLP_HTTP_ADDR: '127.0.0.1:0',
    HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0',
    HOOKWATCH_HTTP_ADDR: '127.0.0.1:0',
  });

  it.each([
    [{ HOOKWATCH_HTTP_AUTH_TOKEN: 'Tk-SuperSecretValue123456' }, 'http.auth.token is set but http.auth.mode is none, so it would be ignored and the HTTP port left open; set http.auth.mode to bearer to ask for it, or unset http.auth.token'],
    [{ HOOKWATCH_HTTP_AUTH_PASSWORD: 'Pw-SuperSecretValue123456' }, 'http.auth.password is set but http.auth.mode is none, so it would be ignored and the HTTP port left open; set http.auth.mode to basic to ask for it, or unset http.auth.password'],
    [{ HOOKWATCH_HTTP_AUTH_USERNAME: 'ops' }, 'http.auth.username is set but http.auth.mode is none, so it would be ignored and the HTTP port left open; set http.auth.mode to basic to ask for it, or unset http.auth.username'],
    [{ HOOKWATCH_HTTP_AUTH_PROXY_HEADER: 'x-forwarded-user' }, 'http.auth.proxyHeader is set but http.auth.mode is none, so it would be ignored and the HTTP port left open; set http.auth.mode to proxy-header to ask for it, or unset http.auth.proxyHeader'],
    [{ HOOKWATCH_HTTP_AUTH_MODE: 'bearer', HOOKWATCH_HTTP_AUTH_TOKEN: 'Tk-SuperSecretValue123456', HOOKWATCH_HTTP_AUTH_PASSWORD: 'Pw-SuperSecretValue123456' }, 'http.auth.password is set but http.auth.mode is bearer, so it would be ignored; set http.auth.mode to basic to ask for it, or unset http.auth.password'],
  ])('credentials of a mode other than http.auth.mode (%j) stop the start, exit 2, naming them and never their value', async (vars, message) => {
    const r = await hookwatch(['serve'], { ...base(), ...vars });
    expect(r.stderr).toContain(message);
    expect(r.stderr).not.toContain('SuperSecretValue123456');
    expect(r.status).toBe(2);
  });

  it.each([
    ['HOOKWATCH_HTTP_ADDR', 'http.addr', '--http-addr'],
    ['HOOKWATCH_OTLP_GRPC_ADDR', 'otlp.grpc.addr', '--otlp-grpc-addr'],
    ['HOOKWATCH_OTLP_HTTP_ADDR', 'otlp.http.addr', '--otlp-http-addr'],
  ])('a port in use names the setting (%s) and exits 1', async (envName, key, flag) => {
    const port = await heldPort();
    const r = await hookwatch(['serve'], { ...base(), [envName]: `127.0.0.1:${port}` });
    expect(r.stderr).toContain(`hookwatch: ${key} 127.0.0.1:${port} is in use (${envName}, ${flag}): another process listens there`);
    expect(r.status).toBe(1);
  });

  it.each([
    ['the database', { HOOKWATCH_DB: '/proc/hookwatch-none/h.db' }, 'db /proc/hookwatch-none/h.db (HOOKWATCH_DB, --db)', []],
    ['the forwarding queue', { HOOKWATCH_FORWARD_ENDPOINT: 'http://127.0.0.1:2', HOOKWATCH_FORWARD_QUEUE_PATH: '/proc/hookwatch-none/fq.db' }, 'forward.queue.path /proc/hookwatch-none/fq.db (HOOKWATCH_FORWARD_QUEUE_PATH, --forward-queue-path)', [NEW_DATABASE]],
  ])('%s in a folder that cannot be made (under /proc) is an error naming the setting, exit 1, not a process that spins', (_what, vars, setting, before) => {
    // The real process, killed with SIGKILL past the timeout: one spinning in a synchronous loop takes no SIGTERM.
    const r = spawnSync(process.execPath, [BIN, 'serve'], { encoding: 'utf8', env: env({ ...base(), ...vars }), cwd: dir, timeout: 20_000, killSignal: 'SIGKILL' });
    expect(r.signal).toBeNull();
    expect(stderrLines(r.stderr)).toEqual([...before, `hookwatch: ${setting}: cannot make its folder (ENOENT: no such file or directory, mkdir '/proc/hookwatch-none')`]);
    expect(r.status).toBe(1);
  });

  it.each([
    ['the database', 'HOOKWATCH_DB', '--db', 'db', {}, []],
    ['the forwarding queue', 'HOOKWATCH_FORWARD_QUEUE_PATH', '--forward-queue-path', 'forward.queue.path', { HOOKWATCH_FORWARD_ENDPOINT: 'http://127.0.0.1:2' }, [NEW_DATABASE]],
  ])('%s given as a folder is an error naming the setting, its variable and its flag, exit 1, and leaves no file beside it', (_what, envName, flag, key, vars, before) => {
    const parent = mkdtempSync(join(dir, 'folder-'));
    const folder = join(parent, 'data');
    mkdirSync(folder);
    const r = hookwatchProcess(['serve'], { ...base(), ...vars, [envName]: folder });
    expect(stderrLines(r.stderr)).toEqual([...before, `hookwatch: ${key} ${folder} (${envName}, ${flag}): cannot open it (EISDIR: illegal operation on a directory, open '${folder}')`]);
    expect(r.status).toBe(1);
    expect(readdirSync(parent), 'files left beside the folder').toEqual(['data']);
  });

  /** `hookwatch serve` in a process of its own, once it has said where the dashboard is. */
  async function serving(vars: Record<string, string>, nodeArgs: string[] = []): Promise<{ child: ChildProcess; line: { msg: string; dashboard: string }; logged: () => Record<string, unknown>[]; stderr: () => string }> {
    const child = spawn(process.execPath, [...nodeArgs, BIN, 'serve'], { env: env(vars), cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
    let buf = '';
    const logged = (): Record<string, unknown>[] => buf.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    const line = await new Promise<{ msg: string; dashboard: string }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no start-up line: ${buf}`)), 20_000);
      child.once('exit', (code) => reject(new Error(`exited ${code} before its start-up line: ${buf}`)));
      child.stderr.on('data', (c: Buffer) => {
        buf += c.toString('utf8');
        const found = buf.split('\n').find((l) => l.includes('"msg":"dashboard at '));
        if (found) {
          clearTimeout(timer);
          resolve(JSON.parse(found) as { msg: string; dashboard: string });
        }
      });
    });
    return { child, line, logged, stderr: () => buf };
  }

  async function stopped(child: ChildProcess): Promise<void> {
    child.kill('SIGTERM');
    if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
  }

  it('an OTLP/HTTP exporter pointed at the gRPC port is told the OTLP/HTTP port it listens on, not its default, in the log and the overview', async () => {
    const { child, logged } = await serving(base());
    try {
      const started = logged().find((l) => l['msg'] === 'hookwatch started') as { otlpHttp: string; otlpGrpc: string; http: string };
      // An http/json exporter's request, sent over HTTP/1.1 to the gRPC port: the connection is closed.
      await expect(fetch(`${started.otlpGrpc}/v1/logs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).rejects.toThrow();
      const warned = await vi.waitFor(() => {
        const line = logged().find((l) => String(l['msg']).startsWith('otlp grpc: a client that does not speak gRPC'));
        if (!line) throw new Error('no line about a client that does not speak gRPC yet');
        return line;
      }, { timeout: 10_000 });
      expect(warned['msg']).toBe(`otlp grpc: a client that does not speak gRPC connected; an OTLP/HTTP exporter (OTEL_EXPORTER_OTLP_PROTOCOL http/protobuf or http/json) goes to the OTLP/HTTP port, ${new URL(started.otlpHttp).port} (otlp.http.addr), a gRPC one to this port needs OTEL_EXPORTER_OTLP_PROTOCOL=grpc`);
      // The empty overview lists the refusal with the same port.
      const overview = await (await fetch(`${started.http}/api/v1/overview`)).json() as { otlpRefusals: { transport: string; reason: string; hint?: string }[] };
      expect(overview.otlpRefusals.find((r) => r.transport === 'grpc')).toMatchObject({ reason: 'malformed', hint: `an OTLP/HTTP exporter goes to the OTLP/HTTP port, ${new URL(started.otlpHttp).port}; a gRPC one to this port needs OTEL_EXPORTER_OTLP_PROTOCOL=grpc` });
    } finally {
      await stopped(child);
    }
  });

  describe('on PostgreSQL through its Unix socket', () => {
    const pg = useTestServer();
    /** postgres://user:password@/database?host=<socket folder>&port=<port>: no host, as libpq and node-postgres take it. */
    const socketUrl = (database: string, socketDir = pg.server().socketDir): string => {
      const { user, password, port } = pg.server();
      return `postgres://${user}:${encodeURIComponent(password)}@/${database}?host=${socketDir}&port=${port}`;
    };

    it('serves a postgres://user:password@/db?host=<socket folder> URL, connected through the socket, the password redacted', async () => {
      const name = new URL(await pg.server().createDatabase()).pathname.slice(1);
      const { child, logged } = await serving({ ...base(), HOOKWATCH_DB: socketUrl(name) });
      try {
        const { user, socketDir, port } = pg.server();
        expect(logged().find((l) => l['msg'] === 'hookwatch started')).toMatchObject({ store: 'postgres', db: `postgres://${user}:<redacted>@/${name}?host=${socketDir}&port=${port}` });
        // A connection over a Unix socket has no client address; one over TCP (the server listens there too) has one.
        const sessions = await queryOnce<{ socket: boolean }>(pg.server().url(), "SELECT client_addr IS NULL AS socket FROM pg_stat_activity WHERE datname = $1 AND application_name LIKE 'hookwatch%'", [name]);
        expect(sessions.length).toBeGreaterThan(0);
        expect(sessions.every((s) => s.socket)).toBe(true);
      } finally {
        await stopped(child);
      }
      expect(JSON.stringify(logged())).not.toContain(pg.server().password);
    });

    it('a socket folder with no server behind it is waited for until postgres.startTimeout, then stops the start with an error that holds no password', () => {
      // No socket yet is a server not started yet (a sidecar coming up): tried again, each failure logged.
      const r = hookwatchProcess(['serve'], { ...base(), HOOKWATCH_DB: socketUrl('hookwatch', mkdtempSync(join(dir, 'no-server-'))), HOOKWATCH_POSTGRES_START_TIMEOUT: '1s' });
      expect(r.stderr).toMatch(/^\{.*"msg":"postgres not reachable at start; trying again".*connect ENOENT .*\.s\.PGSQL\.\d+/);
      expect(r.stderr).toMatch(/^hookwatch: cannot open the PostgreSQL store: connect ENOENT .*\.s\.PGSQL\.\d+/m);
      expect(r.stderr).not.toContain(pg.server().password);
      expect(r.stderr).not.toContain(encodeURIComponent(pg.server().password));
      expect(r.status).toBe(1);
    });
  });

  it.each([
    ['SQLite file', 'HOOKWATCH_DB', 'db', {}, 'a SQLite store is served by one process at a time'],
    ['forwarding queue file', 'HOOKWATCH_FORWARD_QUEUE_PATH', 'forward.queue.path', { HOOKWATCH_FORWARD_ENDPOINT: 'http://127.0.0.1:2' }, 'a forwarding queue file is used by one process at a time'],
  ])('a second process on the same %s is refused at once, and starts once the first has stopped', async (_what, envName, key, extra, why) => {
    // Each process has files of its own but the one shared.
    const shared = join(mkdtempSync(join(dir, 'shared-')), 'shared.db');
    const vars = (): Record<string, string> => ({ ...base(), ...extra, HOOKWATCH_FORWARD_QUEUE_PATH: join(mkdtempSync(join(dir, 'fq-')), 'fq.db'), [envName]: shared });
    const first = await serving(vars());
    try {
      const second = hookwatchProcess(['serve'], vars());
      // The lock names the process that holds it, for an operator to find it.
      expect(second.stderr).toContain(`hookwatch: another hookwatch process uses ${key} ${shared} (pid ${first.child.pid} on ${hostname()} holds ${shared}.lock): ${why}`);
      expect(second.status).toBe(1);
    } finally {
      await stopped(first.child);
    }
    const third = await serving(vars());
    await stopped(third.child);
  });

  it('in fan-out mode, leaves a queue file another process forwards from to it, the warning naming its lock and that process', async () => {
    const queue = join(mkdtempSync(join(dir, 'shared-')), 'fq.db');
    const first = await serving({ ...base(), HOOKWATCH_FORWARD_ENDPOINT: 'http://127.0.0.1:2', HOOKWATCH_FORWARD_QUEUE_PATH: queue });
    try {
      const second = await serving({ ...base(), HOOKWATCH_FORWARD_QUEUE_PATH: queue });
      try {
        expect(second.logged().filter((l) => l['level'] === 'warn')).toEqual([expect.objectContaining({
          msg: 'forwarding is off (no forward.endpoint); another hookwatch process uses the forward queue file and holds its lock: what the file holds is left to that process, neither delivered nor expired here',
          path: queue,
          lock: `${queue}.lock`,
          holder: { pid: first.child.pid, host: hostname() },
        })]);
      } finally {
        await stopped(second.child);
      }
    } finally {
      await stopped(first.child);
    }
  });

  it('says where each port listens and which database it uses, and warns of ports open to all without credentials', async () => {
    const vars: Record<string, string> = { ...base(), HOOKWATCH_OTLP_HTTP_ADDR: '0.0.0.0:0', HOOKWATCH_OTLP_GRPC_ADDR: '0.0.0.0:0', HOOKWATCH_HTTP_ADDR: '0.0.0.0:0' };
    const { child, logged } = await serving(vars);
    try {
      const lines = logged();
      expect(lines.find((l) => l['msg'] === 'hookwatch started')).toMatchObject({ listen: { otlpHttp: '0.0.0.0:0', otlpGrpc: '0.0.0.0:0', http: '0.0.0.0:0' }, store: 'sqlite', db: vars['HOOKWATCH_DB'] });
      const warnings = lines.filter((l) => l['level'] === 'warn').map((l) => String(l['msg']));
      expect(warnings).toContain('the API and dashboard listen on 0.0.0.0:0 without authentication: anyone who can reach it reads hook data and can create silences; set http.auth.mode (or listen on 127.0.0.1 behind an authenticating proxy)');
      expect(warnings).toContain('the OTLP receivers listen on 0.0.0.0:0 and 0.0.0.0:0 without otlp.ingestToken: anyone who can reach them can send telemetry');
    } finally {
      await stopped(child);
    }
    // On loopback (the default) there is nothing to warn of.
    const local = await serving(base());
    try {
      expect(local.logged().filter((l) => l['level'] === 'warn')).toEqual([]);
    } finally {
      await stopped(local.child);
    }
  });

  it('warns that a proxy-header port open beyond loopback lets in anyone who sets the header, as it does', async () => {
    const vars: Record<string, string> = { ...base(), HOOKWATCH_HTTP_ADDR: '0.0.0.0:0', HOOKWATCH_HTTP_AUTH_MODE: 'proxy-header', HOOKWATCH_HTTP_AUTH_PROXY_HEADER: 'X-Forwarded-User' };
    const { child, logged } = await serving(vars);
    try {
      const warnings = logged().filter((l) => l['level'] === 'warn').map((l) => String(l['msg']));
      expect(warnings).toEqual(['the API and dashboard listen on 0.0.0.0:0 with http.auth.mode proxy-header: anyone who can reach it can set x-forwarded-user and is let in; listen on 127.0.0.1 behind the proxy (or require a client certificate: http.tls.clientCaFile)']);
      // What the warning says: a client that is no proxy, straight to the port, names any user it likes.
      const port = new URL(String((logged().find((l) => l['msg'] === 'hookwatch started') as { http: string }).http)).port;
      expect((await fetch(`http://127.0.0.1:${port}/api/v1/hooks`)).status).toBe(401);
      expect((await fetch(`http://127.0.0.1:${port}/api/v1/hooks`, { headers: { 'x-forwarded-user': 'anyone' } })).status).toBe(200);
    } finally {
      await stopped(child);
    }
    // Behind the proxy on loopback there is nothing to warn of.
    const local = await serving({ ...vars, HOOKWATCH_HTTP_ADDR: '127.0.0.1:0' });
    try {
      expect(local.logged().filter((l) => l['level'] === 'warn')).toEqual([]);
    } finally {
      await stopped(local.child);
    }
  });

  it('warns once at start of the default rule kinds a listed rule set leaves off, and how to keep them', async () => {
    const file = join(dir, 'serve-rules.yaml');
    writeFileSync(file, 'alerting:\n  rules:\n    - { kind: persisted, window: 1h, labels: { source: hookwatch } }\n    - { kind: headroom, threshold: 0.85, for: 10m }\n    - { kind: silence, scope: feed, after: 2h }\n');
    const { child, logged } = await serving({ ...base(), HOOKWATCH_CONFIG: file });
    try {
      expect(logged().filter((l) => l['level'] === 'warn').map((l) => l['msg'])).toEqual([RULES_WARNING]);
    } finally {
      await stopped(child);
    }
  });

  it.skipIf(!HAVE_OPENSSL)('with TLS on, says https and grpcs, and that URL serves the dashboard over https', async () => {
    const tls = mkdtempSync(join(dir, 'tls-'));
    const ca = certAuthority(tls, 'cli');
    const cert = issue(ca, 'hookwatch', 'server');
    const vars = { ...base(), HOOKWATCH_OTLP_TLS_CERT_FILE: cert.certFile, HOOKWATCH_OTLP_TLS_KEY_FILE: cert.keyFile, HOOKWATCH_HTTP_TLS_CERT_FILE: cert.certFile, HOOKWATCH_HTTP_TLS_KEY_FILE: cert.keyFile, HOOKWATCH_HTTP_TLS_CLIENT_CA_FILE: ca.certFile };
    const { child, line, logged } = await serving(vars);
    try {
      expect(line.msg).toMatch(/^dashboard at https:\/\/127\.0\.0\.1:\d+\/; send OTLP to https:\/\/127\.0\.0\.1:\d+ \(https\) or https:\/\/127\.0\.0\.1:\d+ \(grpcs\)$/);
      expect(logged().find((l) => l['msg'] === 'hookwatch started')).toMatchObject({ tls: { otlp: 'tls', http: 'mutual' } });
      const client = issue(ca, 'browser', 'client');
      const status = await new Promise<number>((resolve, reject) => {
        httpsRequest(line.dashboard, { ca: readFileSync(ca.certFile), cert: readFileSync(client.certFile), key: readFileSync(client.keyFile), servername: 'localhost' }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        }).on('error', reject).end();
      });
      expect(status).toBe(200);
    } finally {
      await stopped(child);
    }
  });

  // A token that short can be guessed, and the shortest ones could not be scrubbed from the log.
  it.each([
    ['otlp.ingestToken', { HOOKWATCH_INGEST_TOKEN: 'Zq9-too-short-1' }],
    ['http.auth.token', { HOOKWATCH_HTTP_AUTH_MODE: 'bearer', HOOKWATCH_HTTP_AUTH_TOKEN: 'Zq9-too-short-2' }],
  ])('%s shorter than 16 characters stops the start, naming the setting and the minimum, never the token', (key, vars) => {
    const r = hookwatchProcess(['serve'], { ...base(), ...vars });
    expect(r.stderr).toContain(`for ${key}: shorter than 16 characters`);
    expect(r.stderr).not.toMatch(/Zq9-too-short/);
    expect(r.status).toBe(2);
  });

  it('starts with tokens of 16 characters, and the API answers the bearer one', async () => {
    const token = 'Zq9-sixteen-char';
    const { child, line, logged } = await serving({ ...base(), HOOKWATCH_INGEST_TOKEN: 'Zq9-ingest-16chr', HOOKWATCH_HTTP_AUTH_MODE: 'bearer', HOOKWATCH_HTTP_AUTH_TOKEN: token });
    try {
      const api = new URL('/api/v1/hooks', line.dashboard);
      expect((await fetch(api, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
      expect((await fetch(api)).status).toBe(401);
      expect(JSON.stringify(logged())).not.toMatch(/Zq9-/);
    } finally {
      await stopped(child);
    }
  });

  it("keeps Node's warnings that type stripping and SQLite are experimental off its log, those of its worker threads too", async () => {
    const preload = await experimentalWarningsPreload(mkdtempSync(join(dir, 'preload-')));
    const { child, line, stderr } = await serving(base(), ['--import', preload]);
    try {
      // A read of the store (its read workers) and an OTLP/JSON body over 2 MiB (parsed on a thread of its own).
      expect((await fetch(new URL('/api/v1/hooks', line.dashboard))).status).toBe(200);
      const otlp = /send OTLP to (\S+) \(http\)/.exec(line.msg)?.[1] ?? '';
      const body = JSON.stringify({ resourceLogs: [], padding: 'x'.repeat(3 * 1024 * 1024) });
      expect((await fetch(`${otlp}/v1/logs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).status).toBe(200);
    } finally {
      await stopped(child);
    }
    expect(stderr().split('\n').filter((l) => l !== '' && !l.startsWith('{'))).toEqual([]);
  });

  // Operators bound the heap with a V8 flag (a container's memory limit): Node refuses one in a worker thread's
  // execArgv, and every worker (the schema migration at start, the store's readers, the OTLP/JSON parser thread,
  // the backup's check) must start all the same.
  it.each([
    ["on node's command line", ['--max-old-space-size=256'], {}],
    ['in NODE_OPTIONS', [], { NODE_OPTIONS: '--max-old-space-size=256' }],
  ])('with a V8 heap flag %s, migrates an old-schema file, takes a large OTLP/JSON export, answers reads and backs up', async (_where, nodeArgs, vars) => {
    const db = join(mkdtempSync(join(dir, 'heap-flag-')), 'h.db');
    await oldSchemaFile(db);
    const { child, line, logged } = await serving({ ...base(), HOOKWATCH_DB: db, ...vars }, nodeArgs);
    const large = maxSizeRequest('json', 3 * 1024 * 1024);
    try {
      expect(logged().find((l) => l['msg'] === 'sqlite schema migrated')).toMatchObject({ from: OLD_SCHEMA, to: MIGRATIONS.length });
      const otlp = /send OTLP to (\S+) \(http\)/.exec(line.msg)?.[1] ?? '';
      expect(large.body.length).toBeGreaterThan(JSON_THREAD_MIN_BYTES);
      const res = await postOtlp(otlp, '/v1/logs', large.body, { 'content-type': large.contentType });
      expect(res.status).toBe(200);
      expect(JSON.parse(res.body.toString('utf8'))).toEqual({});
      const hooks = await fetch(new URL('/api/v1/hooks', line.dashboard));
      expect(hooks.status).toBe(200);
      const executions = Object.fromEntries(((await hooks.json()) as HooksResponse).hooks.map((h) => [h.hookName, h.executions]));
      expect(executions).toEqual({ 'PostToolUse:Bash': OLD_SCHEMA_EVENTS, 'PreToolUse:Bash': large.records });
    } finally {
      await stopped(child);
    }
    const backup = spawnSync(process.execPath, [...nodeArgs, BIN, 'backup', '--db', db, '--to', `${db}.backup`], { encoding: 'utf8', env: env(vars), cwd: dir, timeout: 20_000 });
    expect(backup.stderr).not.toContain('execArgv');
    expect(backup.status).toBe(0);
  });

  it('says in one line where the dashboard is and where to send telemetry, and that URL serves the dashboard', async () => {
    const { child, line } = await serving(base());
    try {
      expect(line.msg).toMatch(/^dashboard at http:\/\/127\.0\.0\.1:\d+\/; send OTLP to http:\/\/127\.0\.0\.1:\d+ \(http\) or http:\/\/127\.0\.0\.1:\d+ \(grpc\)$/);
      const res = await fetch(line.dashboard);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/html');
    } finally {
      await stopped(child);
    }
  });

  // As the links in notifications: the URL a person opens, not `https://user:<redacted>@host/?token=<redacted>/`.
  it('says where the dashboard is without the credentials or query of alerting.externalUrl', async () => {
    const { child, line } = await serving({ ...base(), HOOKWATCH_EXTERNAL_URL: 'https://hw-user:Hw-pass-5150@hookwatch.example.com/hw?token=Tok-secret-9' });
    try {
      expect(line.dashboard).toBe('https://hookwatch.example.com/hw/');
      expect(line.msg).toMatch(/^dashboard at https:\/\/hookwatch\.example\.com\/hw\/; send OTLP to /);
    } finally {
      await stopped(child);
    }
  });
});

describe('exposure warnings', () => {
  const open = { HOOKWATCH_OTLP_HTTP_ADDR: '0.0.0.0:4318', HOOKWATCH_OTLP_GRPC_ADDR: '0.0.0.0:4317', HOOKWATCH_HTTP_ADDR: '0.0.0.0:9318' };
  const otlpTls = { HOOKWATCH_OTLP_TLS_CERT_FILE: '/etc/hookwatch-tls/tls.crt', HOOKWATCH_OTLP_TLS_KEY_FILE: '/etc/hookwatch-tls/tls.key' };
  const httpTls = { HOOKWATCH_HTTP_TLS_CERT_FILE: '/etc/hookwatch-tls/tls.crt', HOOKWATCH_HTTP_TLS_KEY_FILE: '/etc/hookwatch-tls/tls.key' };
  const warnings = (vars: Record<string, string>): string[] => exposureWarnings(toConfig(loadConfig({ env: { ...open, HOOKWATCH_HTTP_AUTH_MODE: 'bearer', HOOKWATCH_HTTP_AUTH_TOKEN: 'tok-abcdef-0123456', ...vars } })));
  const otlpInClear = 'the OTLP receivers listen on 0.0.0.0:4318 and 0.0.0.0:4317 without TLS: otlp.ingestToken crosses the network in clear with every request; set otlp.tls.certFile and otlp.tls.keyFile (or terminate TLS in a proxy or OpenTelemetry Collector in front)';
  const httpInClear = 'the API and dashboard listen on 0.0.0.0:9318 without TLS: the token of http.auth.mode bearer crosses the network in clear; set http.tls.certFile and http.tls.keyFile (or terminate TLS in a proxy in front)';

  it('a token or password sent to a port open to the network without TLS is said to cross it in clear', () => {
    expect(warnings({ HOOKWATCH_INGEST_TOKEN: 'ingest-1234567890ab' })).toEqual([httpInClear, otlpInClear]);
    expect(warnings({ HOOKWATCH_HTTP_AUTH_MODE: 'basic', HOOKWATCH_HTTP_AUTH_TOKEN: '', HOOKWATCH_HTTP_AUTH_USERNAME: 'ops', HOOKWATCH_HTTP_AUTH_PASSWORD: 'pw-123456', ...otlpTls, HOOKWATCH_INGEST_TOKEN: 'ingest-1234567890ab' })).toEqual([httpInClear.replace('the token of http.auth.mode bearer', 'the password of http.auth.mode basic')]);
    expect(warnings({ HOOKWATCH_INGEST_TOKEN: 'ingest-1234567890ab', ...otlpTls, ...httpTls })).toEqual([]);
    // On loopback nothing crosses a network.
    expect(exposureWarnings(toConfig(loadConfig({ env: { HOOKWATCH_INGEST_TOKEN: 'ingest-1234567890ab', HOOKWATCH_HTTP_AUTH_MODE: 'bearer', HOOKWATCH_HTTP_AUTH_TOKEN: 'tok-abcdef-0123456' } })))).toEqual([]);
  });

  it('a client certificate under mutual TLS counts as authentication; TLS alone does not', () => {
    const anyone = 'the OTLP receivers listen on 0.0.0.0:4318 and 0.0.0.0:4317 without otlp.ingestToken: anyone who can reach them can send telemetry';
    expect(warnings({ ...otlpTls, ...httpTls })).toEqual([anyone]);
    expect(warnings({ ...otlpTls, ...httpTls, HOOKWATCH_OTLP_TLS_CLIENT_CA_FILE: '/etc/hookwatch-tls/ca.crt' })).toEqual([]);
    const noAuth = toConfig(loadConfig({ env: { ...open, ...httpTls, ...otlpTls, HOOKWATCH_OTLP_TLS_CLIENT_CA_FILE: '/etc/hookwatch-tls/ca.crt' } }));
    expect(exposureWarnings(noAuth)).toEqual([expect.stringMatching(/^the API and dashboard listen on 0\.0\.0\.0:9318 without authentication/)]);
    expect(exposureWarnings({ ...noAuth, http: { ...noAuth.http, tls: { ...noAuth.http.tls!, clientCaFile: '/etc/hookwatch-tls/ca.crt' } } })).toEqual([]);
    const proxied = toConfig(loadConfig({ env: { ...open, ...httpTls, ...otlpTls, HOOKWATCH_OTLP_TLS_CLIENT_CA_FILE: '/etc/hookwatch-tls/ca.crt', HOOKWATCH_HTTP_AUTH_MODE: 'proxy-header', HOOKWATCH_HTTP_AUTH_PROXY_HEADER: 'x-forwarded-user' } }));
    expect(exposureWarnings(proxied)).toEqual([expect.stringMatching(/^the API and dashboard listen on 0\.0\.0\.0:9318 with http\.auth\.mode proxy-header: anyone who can reach it can set x-forwarded-user/)]);
    expect(exposureWarnings({ ...proxied, http: { ...proxied.http, tls: { ...proxied.http.tls!, clientCaFile: '/etc/hookwatch-tls/ca.crt' } } })).toEqual([]);
  });
});

describe('output through a pipe', () => {
  it('a report larger than the pipe buffer arrives whole before the process exits', () => {
    // Thirty copies of a real session, each under its own ids: scan --json writes hundreds of KB, far more than
    // the 64 KiB a pipe holds, and a reader such as jq must get all of it.
    const session = fileURLToPath(new URL('../../testdata/claude-code-2.1.332/transcripts-a/projects/-home-dev-proj/229cfef5-26c4-44fa-86e5-e4dea73819d9.jsonl', import.meta.url));
    const text = readFileSync(session, 'utf8');
    const project = join(dir, 'pipe', 'projects', 'p');
    mkdirSync(project, { recursive: true });
    for (let i = 0; i < 30; i++) {
      const copy = text.replace(/\b([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-)[0-9a-f]{12}\b/g, (_m, head: string) => `${head}${String(i).padStart(12, '0')}`);
      writeFileSync(join(project, `session-${i}.jsonl`), copy);
    }
    // The reader starts a moment late, as a busy one does: the pipe fills before hookwatch has written it all.
    const quote = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`;
    const r = spawnSync('sh', ['-c', `${quote(process.execPath)} ${quote(BIN)} scan --json ${quote(join(dir, 'pipe'))} | (sleep 1; cat)`], { encoding: 'utf8', env: env(), cwd: dir, timeout: 20_000 });
    expect(r.stderr).toBe('');
    expect(r.stdout.length).toBeGreaterThan(3 * 65_536);
    const report = JSON.parse(r.stdout) as { sessions: unknown[] };
    expect(report.sessions).toHaveLength(30);
    // A reader that stops early (head) ends the output without an error from hookwatch.
    const head = spawnSync('sh', ['-c', `${quote(process.execPath)} ${quote(BIN)} scan ${quote(join(dir, 'pipe'))} | (sleep 1; head -c 100) >/dev/null; echo done`], { encoding: 'utf8', env: env(), cwd: dir, timeout: 20_000 });
    expect(head.stderr).toBe('');
    expect(head.stdout).toBe('done\n');
  });
});

describe('an older Node.js', () => {
  it('is refused with the version found and what to run instead', () => {
    const problem = nodeVersionProblem('20.20.2', '/usr/bin/node') ?? '';
    expect(problem).toContain('hookwatch needs Node.js 24 or newer; this is Node.js 20.20.2 (/usr/bin/node).');
    expect(problem).toContain('npm run hookwatch -- <command>');
    // From a project folder, npx finds no hookwatch: the line to paste names this package's folder.
    expect(problem).toContain(`npm --prefix ${fileURLToPath(new URL('../../..', import.meta.url)).replace(/\/$/, '')} run hookwatch -- <command>`);
    expect(nodeVersionProblem('20.20.2', '/usr/bin/node', "/opt/it's here")).toContain(`npm --prefix '/opt/it'\\''s here' run hookwatch`);
    expect(nodeVersionProblem('24.0.0')).toBeUndefined();
  });

  it('npm run hookwatch -- <command> from another folder reads paths from that folder, not the package', () => {
    const project = mkdtempSync(join(dir, 'project-'));
    writeFileSync(join(project, 'settings.json'), JSON.stringify({ hooks: { Stop: [{ hooks: [{ type: 'command', command: 'echo hi' }] }] } }));
    const root = fileURLToPath(new URL('../../../', import.meta.url));
    const r = spawnSync('npm', ['--prefix', root, 'run', '--silent', 'hookwatch', '--', 'guard', '--install', 'settings.json', '--command', 'hookwatch guard'], { encoding: 'utf8', cwd: project, env: { ...env(), npm_config_update_notifier: 'false' }, timeout: 60_000 });
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain(`${join(project, 'settings.json')}: wrapped 1 of 1 command hook(s)`);
    expect(readFileSync(join(project, 'settings.json'), 'utf8')).toContain(`"exec hookwatch guard -- 'echo hi'"`);
  });

  it('npm run hookwatch -- <command> from another folder reads the default database from the package, as npm start does', () => {
    // npm runs the script in the package folder and says where it was run from in INIT_CWD.
    const pkg = mkdtempSync(join(dir, 'package-'));
    const project = mkdtempSync(join(dir, 'project-'));
    const npm = { npm_lifecycle_event: 'hookwatch', npm_command: 'run-script', INIT_CWD: project };
    const run = (args: string[]): SpawnSyncReturns<string> => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', env: env(npm), cwd: pkg, timeout: 20_000 });
    const config = parseYaml(run(['config']).stdout) as { db: string; forward: { queue: { path: string } } };
    expect(config.db).toBe(join(pkg, 'data', 'hookwatch.db'));
    expect(config.forward.queue.path).toBe(join(pkg, 'data', 'forward-queue.db'));
    const backup = run(['backup', '--to', 'copy.db']);
    expect(backup.stderr).toContain(`no database at ${join(pkg, 'data', 'hookwatch.db')}`);
    expect(backup.status).toBe(1);
    // A path the user gives is their folder's.
    const given = run(['backup', '--db', './mine.db', '--to', 'copy.db']);
    expect(given.stderr).toContain(`no database at ${join(project, 'mine.db')}`);
    expect(spawnSync(process.execPath, [BIN, 'config'], { encoding: 'utf8', env: env({ ...npm, HOOKWATCH_DB: 'own.db' }), cwd: pkg, timeout: 20_000 }).stdout).toMatch(/^db: own\.db # from HOOKWATCH_DB$/m);
  });

  // The machine's own Node, when it is older than 24 (Debian's is 20): the real refusal, before any .ts loads.
  const old = spawnSync('which', ['-a', 'node'], { encoding: 'utf8' }).stdout.split('\n').filter((p) => p && !p.includes('node_modules'))
    .find((p) => Number(spawnSync(p, ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout.split('.')[0]) < 24);
  if (old) {
    it(`${old} gets a sentence, not ERR_UNKNOWN_FILE_EXTENSION`, () => {
      const r = spawnSync(old, [BIN, '--help'], { encoding: 'utf8', env: env(), timeout: 20_000 });
      expect(r.stderr).toMatch(/^hookwatch needs Node\.js 24 or newer; this is Node\.js \d+\./);
      expect(r.stderr).not.toContain('ERR_UNKNOWN_FILE_EXTENSION');
      expect(r.status).toBe(1);
      const check = spawnSync(old, [fileURLToPath(new URL('../../../scripts/node-check.mjs', import.meta.url))], { encoding: 'utf8', timeout: 20_000 });
      expect(check.stderr).toContain('hookwatch needs Node.js 24 or newer');
      expect(check.status).toBe(1);
    });
  }
});
