/** Settings whose empty value would silently lose data are refused at start, naming the key. */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, toConfig } from './index.ts';

describe('db', () => {
  // SQLite opens '' as a private temporary database deleted on close: every acknowledged event would be gone
  // after a restart. An empty variable is a common compose-file accident (HOOKWATCH_DB=${DB_PATH} with it unset).
  it.each(['', '   '])('refuses %j', (db) => {
    expect(() => toConfig(loadConfig({ env: { HOOKWATCH_DB: db } }))).toThrow(ConfigError);
    expect(() => toConfig(loadConfig({ env: { HOOKWATCH_DB: db } }))).toThrow(/\bdb\b/);
  });

  // A mistyped scheme was taken for a relative file path: hookwatch ran on a SQLite file under ./postgress:/, its
  // folder named after the password, while the operator believed it wrote to the server.
  it.each(['postgress://u:LeakPw11@h/db', 'mysql://u:LeakPw11@h/db', 'file:///var/lib/hookwatch/h.db'])('refuses %s, naming the scheme and not the password', (db) => {
    const scheme = db.slice(0, db.indexOf('://'));
    expect(() => toConfig(loadConfig({ env: { HOOKWATCH_DB: db } }))).toThrow(new RegExp(`\\bdb\\b.*a ${scheme}:// URL is not a store hookwatch opens`));
    expect(() => toConfig(loadConfig({ env: { HOOKWATCH_DB: db } }))).not.toThrow(/LeakPw11/);
  });

  it.each(['postgres:/u:LeakPw11@h/db', 'postgresql:u:LeakPw11@h/db', 'postgres//u:LeakPw11@h/db'])('refuses %s, a postgres URL written wrong, without its password', (db) => {
    expect(() => toConfig(loadConfig({ env: { HOOKWATCH_DB: db } }))).toThrow(/\bdb\b.*looks like a postgres:\/\/ URL written wrong/);
    expect(() => toConfig(loadConfig({ env: { HOOKWATCH_DB: db } }))).not.toThrow(/LeakPw11/);
  });

  // Quotes kept from an env file (docker --env-file keeps them), a leading space, `;` typed for `:`: the URL parser
  // does not read these either, so the password would name a SQLite file's folder and show wherever the path does.
  it.each([' postgres://u:LeakPw11@h/db', '"postgres://u:LeakPw11@h/db"', "'postgresql://u:LeakPw11@h/db'", 'postgres;//u:LeakPw11@h/db', 'postgres ://u:LeakPw11@h/db'])('refuses %j, a postgres URL written wrong, without its password', (db) => {
    expect(() => toConfig(loadConfig({ env: { HOOKWATCH_DB: db } }))).toThrow(/\bdb\b.*looks like a postgres:\/\/ URL written wrong/);
    expect(() => toConfig(loadConfig({ env: { HOOKWATCH_DB: db } }))).not.toThrow(/LeakPw11/);
  });

  // A password from `openssl rand -base64` holds `/`: the URL no longer reads, and the store failed at open with
  // `Invalid URL (ERR_INVALID_URL)` or `URI malformed`, naming neither the setting nor what to change.
  it.each(['postgres://u:Leak/Pw+1=@h:5432/db', 'postgres://u:Leak#Pw11@h/db', 'postgres://u:Leak?Pw11@h/db', 'postgresql://u:Leak%CdPw11@h/db'])('refuses %s, a password not percent-encoded, saying how to write it and not the password', (db) => {
    expect(() => toConfig(loadConfig({ env: { HOOKWATCH_DB: db } }))).toThrow(/\bdb\b.*percent-encode.*%2F/);
    expect(() => toConfig(loadConfig({ env: { HOOKWATCH_DB: db } }))).not.toThrow(/Leak|Pw11/);
  });

  it('refuses a postgres URL that does not read for another reason without blaming the password', () => {
    expect(() => toConfig(loadConfig({ env: { HOOKWATCH_DB: 'postgres://u:LeakPw11@h:54x2/db' } }))).toThrow(/\bdb\b.*cannot be read as a URL: check its host, port and database name/);
    expect(() => toConfig(loadConfig({ env: { HOOKWATCH_DB: 'postgres://u:LeakPw11@h:54x2/db' } }))).not.toThrow(/LeakPw11|percent-encode/);
  });

  it('accepts the URL forms node-postgres reads: encoded passwords, spaces, a Unix socket as host', () => {
    for (const db of [
      'postgres://u:Leak%2FPw%2B1%3D@h:5432/db',
      'postgres://u:Leak@Pw11@h/db',
      'postgres://u:Leak Pw11@h/db',
      'postgres://u:Leak%Pw11@h/db',
      'postgres://u:LeakPw11@/db?host=/var/run/postgresql',
      'postgres:///db?host=/var/run/postgresql&user=u&password=LeakPw11',
      'postgres://u:LeakPw11@%2Fvar%2Frun%2Fpostgresql:5432/db',
      'postgres://u:LeakPw11@h/db?options=-c%20search_path%3Dhookwatch',
    ]) {
      expect(toConfig(loadConfig({ env: { HOOKWATCH_DB: db } })).db).toBe(db);
    }
  });

  it('accepts a path or a postgres URL', () => {
    expect(toConfig(loadConfig({ env: { HOOKWATCH_DB: '/var/lib/hookwatch/h.db' } })).db).toBe('/var/lib/hookwatch/h.db');
    expect(toConfig(loadConfig({ env: { HOOKWATCH_DB: 'postgres://u@localhost/h' } })).db).toBe('postgres://u@localhost/h');
    expect(toConfig(loadConfig({ env: { HOOKWATCH_DB: 'POSTGRESQL://u@localhost/h' } })).db).toBe('POSTGRESQL://u@localhost/h');
    expect(toConfig(loadConfig({ env: { HOOKWATCH_DB: 'data/h.db' } })).db).toBe('data/h.db');
    expect(toConfig(loadConfig({ env: { HOOKWATCH_DB: 'postgres-data/h.db' } })).db).toBe('postgres-data/h.db');
    // postgres//h.db: a folder and a file name joined with one slash too many (${DIR}/h.db with DIR=postgres/).
    for (const path of ['C:\\hookwatch\\postgres\\h.db', '/srv/a:b/postgres;h.db', 'postgres/h.db', 'postgres//h.db', ':memory:']) {
      expect(toConfig(loadConfig({ env: { HOOKWATCH_DB: path } })).db).toBe(path);
    }
  });
});

describe('the config file', () => {
  // `--config "$CONFIG"` or HOOKWATCH_CONFIG=${CONFIG} with CONFIG unset read no file at all: hookwatch ran on its
  // defaults (another database, no receivers) as if started without one.
  it.each([
    [{ flags: { config: '' } }, 'flag --config'],
    [{ flags: { config: ' ' } }, 'flag --config'],
    [{ env: { HOOKWATCH_CONFIG: '' } }, 'environment HOOKWATCH_CONFIG'],
  ])('refuses an empty path: %j', (input, source) => {
    expect(() => loadConfig({ env: {}, ...input })).toThrow(ConfigError);
    expect(() => loadConfig({ env: {}, ...input })).toThrow(`${source}: no config file named: give its path, or leave it unset to start without one`);
  });
});

describe('byte sizes', () => {
  // BYTE_UNITS was an object literal: "1constructor" found Object.prototype.constructor and gave NaN, which
  // every bound check lets through, so the request size limit was silently off.
  it.each(['1constructor', '2valueOf', '3toString', '1__proto__'])('refuses the unit in %j', (raw) => {
    expect(() => toConfig(loadConfig({ env: { HOOKWATCH_OTLP_MAX_REQUEST_BYTES: raw } }))).toThrow(ConfigError);
  });

  it('accepts the documented units', () => {
    expect(toConfig(loadConfig({ env: { HOOKWATCH_OTLP_MAX_REQUEST_BYTES: '20MiB' } })).otlp.maxRequestBytes).toBe(20 * 1024 * 1024);
    expect(toConfig(loadConfig({ env: { HOOKWATCH_OTLP_MAX_REQUEST_BYTES: '2048' } })).otlp.maxRequestBytes).toBe(2048);
  });
});

describe('otlp.maxInflightBytes', () => {
  // Every gRPC call reserves twice the largest request before its message is read: a smaller budget would
  // refuse them all.
  it('refuses an explicit budget below two requests, naming both settings', () => {
    expect(() => toConfig(loadConfig({ env: { HOOKWATCH_OTLP_MAX_INFLIGHT_BYTES: '10MiB' } }))).toThrow(/otlp\.maxInflightBytes .* otlp\.maxRequestBytes/);
  });

  it('grows the default with a raised request limit', () => {
    expect(toConfig(loadConfig({ env: {} })).otlp.maxInflightBytes).toBe(256 * 1024 * 1024);
    expect(toConfig(loadConfig({ env: { HOOKWATCH_OTLP_MAX_REQUEST_BYTES: '512MiB' } })).otlp.maxInflightBytes).toBe(1024 * 1024 * 1024);
  });
});
