/**
 * The one table as the stages' settings modules compose it: no key, variable or flag claimed twice, each
 * section in one place (so the reference, `hookwatch --help` and `hookwatch config` show it once), and every row
 * read by the stage that lists it.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig, toConfig } from './index.ts';
import { SETTINGS, flagName } from './schema.ts';

const duplicates = (names: readonly string[]): string[] => names.filter((n, i) => names.indexOf(n) !== i);

describe('the composed settings table', () => {
  it('claims every key, environment variable and flag once', () => {
    expect(SETTINGS.length).toBeGreaterThan(40);
    expect(duplicates(SETTINGS.map((s) => s.key))).toEqual([]);
    expect(duplicates(SETTINGS.flatMap((s) => (s.env ? [s.env] : [])))).toEqual([]);
    expect(duplicates(SETTINGS.filter((s) => s.type !== 'object').map((s) => flagName(s.key)))).toEqual([]);
  });

  it('keeps each section together, so it is listed once and in one place', () => {
    // The reference and `hookwatch --help` group rows by the key's first part (otlp, forward, alerting); a
    // section split across stages' lists would show twice in the help.
    const sections = SETTINGS.map((s) => s.key.split('.')[0] as string);
    const split = [...new Set(sections)].filter((name) => sections.lastIndexOf(name) - sections.indexOf(name) + 1 !== sections.filter((x) => x === name).length);
    expect(split).toEqual([]);
  });

  it('has every row read by the stage that lists it', () => {
    const loaded = loadConfig({ env: {} });
    const read = new Set<string>();
    const values = loaded.values;
    loaded.values = new (class extends Map<string, unknown> {
      override get(key: string): unknown {
        read.add(key);
        return values.get(key);
      }
    })(values);
    toConfig(loaded);
    expect(SETTINGS.map((s) => s.key).filter((k) => !read.has(k))).toEqual([]);
  });
});
