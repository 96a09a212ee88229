/**
 * Reads loaded settings by key with a check of the runtime type, instead of a cast: a key missing from the
 * schema, or a schema type that no longer matches what the stage expects, fails at start with the key's name
 * rather than flowing on as the wrong type.
 */
import type { SettingValues } from './setting.ts';

export class SettingReader implements SettingValues {
  private readonly values: ReadonlyMap<string, unknown>;
  private readonly sources: ReadonlyMap<string, string>;

  constructor(values: ReadonlyMap<string, unknown>, sources: ReadonlyMap<string, string> = new Map()) {
    this.values = values;
    this.sources = sources;
  }

  raw(key: string): unknown {
    if (!this.values.has(key)) throw new Error(`setting ${key} was not loaded (is it in the schema?)`);
    return this.values.get(key);
  }

  string(key: string): string {
    return this.checked(key, (x): x is string => typeof x === 'string', 'a string');
  }

  number(key: string): number {
    return this.checked(key, (x): x is number => typeof x === 'number' && Number.isFinite(x), 'a number');
  }

  boolean(key: string): boolean {
    return this.checked(key, (x): x is boolean => typeof x === 'boolean', 'a boolean');
  }

  list(key: string): string[] {
    return this.checked(key, (x): x is string[] => Array.isArray(x) && x.every((e) => typeof e === 'string'), 'a list of strings');
  }

  oneOf<T extends string>(key: string, allowed: readonly T[]): T {
    return this.checked(key, (x): x is T => typeof x === 'string' && (allowed as readonly string[]).includes(x), `one of ${allowed.join(', ')}`);
  }

  isDefault(key: string): boolean {
    this.raw(key);
    return (this.sources.get(key) ?? 'default') === 'default';
  }

  private checked<T>(key: string, is: (x: unknown) => x is T, expected: string): T {
    const value = this.raw(key);
    if (!is(value)) throw new Error(`setting ${key}: expected ${expected}, got ${Array.isArray(value) ? 'a list' : typeof value}`);
    return value;
  }
}
