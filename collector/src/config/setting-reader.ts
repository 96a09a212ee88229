/**
 * Reads loaded settings by key with a check of the runtime type, instead of a cast: a key missing from the
 * schema, or a schema type that no longer matches what this file expects, fails at start with the key's name
 * rather than flowing on as the wrong type.
 */
export class SettingReader {
  private readonly values: ReadonlyMap<string, unknown>;

  constructor(values: ReadonlyMap<string, unknown>) {
    this.values = values;
  }

  /** The value as loaded, for the object settings that a stage parses itself. */
  raw(key: string): unknown {
    if (!this.values.has(key)) throw new Error(`setting ${key} was not loaded (is it in the schema?)`);
    return this.values.get(key);
  }

  string(key: string): string {
    return this.checked(key, (x): x is string => typeof x === 'string', 'a string');
  }

  /** Numbers, durations (ms) and byte sizes. */
  number(key: string): number {
    return this.checked(key, (x): x is number => typeof x === 'number' && Number.isFinite(x), 'a number');
  }

  boolean(key: string): boolean {
    return this.checked(key, (x): x is boolean => typeof x === 'boolean', 'a boolean');
  }

  list(key: string): string[] {
    return this.checked(key, (x): x is string[] => Array.isArray(x) && x.every((e) => typeof e === 'string'), 'a list of strings');
  }

  /** One of `allowed`, which must match the schema's enum values. */
  oneOf<T extends string>(key: string, allowed: readonly T[]): T {
    return this.checked(key, (x): x is T => typeof x === 'string' && (allowed as readonly string[]).includes(x), `one of ${allowed.join(', ')}`);
  }

  private checked<T>(key: string, is: (x: unknown) => x is T, expected: string): T {
    const value = this.raw(key);
    if (!is(value)) throw new Error(`setting ${key}: expected ${expected}, got ${Array.isArray(value) ? 'a list' : typeof value}`);
    return value;
  }
}
