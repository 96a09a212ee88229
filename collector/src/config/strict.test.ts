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

  it('accepts a path or a postgres URL', () => {
    expect(toConfig(loadConfig({ env: { HOOKWATCH_DB: '/var/lib/hookwatch/h.db' } })).db).toBe('/var/lib/hookwatch/h.db');
    expect(toConfig(loadConfig({ env: { HOOKWATCH_DB: 'postgres://u@localhost/h' } })).db).toBe('postgres://u@localhost/h');
  });
});
