/**
 * The copy backupSqlite takes of a store another connection keeps writing to: one snapshot from the first step
 * to the last, so commits between its steps neither start it over nor get into the copy half-way.
 */
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/helpers.ts';
import { backupSqlite } from './backup.ts';
import { openSqlite } from './database.ts';
import { SqliteStore } from './index.ts';

const tmp = tempDir('hookwatch-backup-store-');
afterAll(() => tmp.cleanup());

describe('backupSqlite', () => {
  it('copies the store as it was when it started, in steps, while another connection commits between them', async () => {
    const path = join(tmp.dir, 'hookwatch.db');
    const store = new SqliteStore({ path });
    await store.close();
    // The writer stands for the service: its own connection in WAL mode, committing row by row.
    const writer = openSqlite(path);
    writer.exec('CREATE TABLE written (n INTEGER PRIMARY KEY, pad BLOB NOT NULL)');
    const insert = writer.prepare('INSERT INTO written (pad) VALUES (randomblob(2000))');
    for (let i = 0; i < 500; i++) insert.run();
    const remaining: number[] = [];
    const result = await backupSqlite({
      db: path, to: join(tmp.dir, 'copy.db'), pagesPerStep: 8,
      onProgress: ({ remainingPages }) => {
        remaining.push(remainingPages);
        // Bounded, so that a backup which starts over at each commit still ends (and the test says so).
        if (remaining.length <= 200) insert.run();
      },
    });
    writer.close();
    expect(remaining.length).toBeGreaterThan(10);
    // Never started over: the pages left only go down.
    expect(remaining.every((r, i) => i === 0 || r < remaining[i - 1]!)).toBe(true);
    const copy = new DatabaseSync(result.path, { readOnly: true });
    try {
      expect(copy.prepare('PRAGMA integrity_check').all()).toEqual([{ integrity_check: 'ok' }]);
      expect(copy.prepare('SELECT COUNT(*) AS n FROM written').get()).toEqual({ n: 500 });
    } finally {
      copy.close();
    }
  });
});
