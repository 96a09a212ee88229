/**
 * Rows kept between calls by key, the least recently used dropped first past a number of entries or of rows
 * together. An entry larger than its share of the rows (`maxEntryRows`) is not kept: it would push out the rest.
 */
export class KeptRows<V extends { readonly rows: readonly unknown[] }> {
  private readonly entries = new Map<string, V>();
  private rowCount = 0;
  private readonly maxEntries: number;
  private readonly maxRows: number;
  private readonly maxEntryRows: number;

  constructor(maxEntries: number, maxRows: number, maxEntryRows: number) {
    this.maxEntries = maxEntries;
    this.maxRows = maxRows;
    this.maxEntryRows = maxEntryRows;
  }

  /** The entry kept under `key`, now the most recently used. */
  get(key: string): V | undefined {
    const found = this.entries.get(key);
    if (found) {
      this.entries.delete(key);
      this.entries.set(key, found);
    }
    return found;
  }

  /** Keeps `value` under `key` in place of what was kept there, the least recently used dropped to make room. */
  set(key: string, value: V): void {
    this.delete(key);
    if (value.rows.length > this.maxEntryRows) return;
    while (this.entries.size > 0 && (this.entries.size >= this.maxEntries || this.rowCount + value.rows.length > this.maxRows)) {
      this.delete(this.entries.keys().next().value as string);
    }
    this.entries.set(key, value);
    this.rowCount += value.rows.length;
  }

  delete(key: string): void {
    const kept = this.entries.get(key);
    if (!kept) return;
    this.rowCount -= kept.rows.length;
    this.entries.delete(key);
  }

  /** Drops every entry `drop` picks. */
  deleteWhere(drop: (value: V) => boolean): void {
    for (const [key, value] of this.entries) if (drop(value)) this.delete(key);
  }

  clear(): void {
    this.entries.clear();
    this.rowCount = 0;
  }

  /** Rows kept in all. */
  get rows(): number {
    return this.rowCount;
  }

  get size(): number {
    return this.entries.size;
  }
}
