/**
 * A SQLite file as a release before this one left it: the migrations from the late arrivals' index on (the
 * counters' count of executions whose sizes may be sums, the stored findings' commands redacted) not applied, some
 * events in it.
 */
import { DatabaseSync } from 'node:sqlite';
import { expect } from 'vitest';
import { hookId } from '../../src/hooks/extract.ts';
import type { HookEvent } from '../../src/hooks/model.ts';
import { MIGRATIONS, SqliteStore } from '../../src/store/sqlite/index.ts';
import { sqliteUndoSizesMaySum } from './downgrade.ts';

/** The migrations from the late arrivals' index on taken back: the file is as the release before them left it. */
export const OLD_SCHEMA = MIGRATIONS.findIndex((m) => m.includes('events_late_arrival'));
/** The events an old-schema file holds, all of hook PostToolUse:Bash. */
export const OLD_SCHEMA_EVENTS = 50;

/** A file at `path` at schema OLD_SCHEMA holding OLD_SCHEMA_EVENTS events of the last minute. */
export async function oldSchemaFile(path: string): Promise<void> {
  const store = new SqliteStore({ path });
  const t = Date.now();
  const inserted = await store.ingest(Array.from({ length: OLD_SCHEMA_EVENTS }, (_, i): HookEvent => ({
    kind: 'complete', dedupKey: `e-${i}`, hookId: hookId('PostToolUse', 'PostToolUse:Bash'), hookEvent: 'PostToolUse',
    hookName: 'PostToolUse:Bash', timeMs: t - i * 1000, numHooks: 1, numSuccess: 1, numBlocking: 0, numNonBlockingError: 0,
    numCancelled: 0, durationMs: 10, stdoutChars: 100, additionalContextChars: null, systemMessageChars: null,
    initialUserMessageChars: null, outputsPersisted: 0, sizesKnown: true, status: 'ok', serviceName: 'claude-code',
    serviceVersion: '2.1.332', sessionId: 's-1', userId: 'u-1', userEmail: 'a@example.com', userAccountUuid: 'acc-1',
    organizationId: 'org-1', terminalType: 'vscode', source: 'otlp', extra: {},
  })));
  expect(inserted.inserted).toHaveLength(OLD_SCHEMA_EVENTS);
  await store.close();
  const db = new DatabaseSync(path);
  db.exec('DROP INDEX events_late_arrival');
  sqliteUndoSizesMaySum(db);
  db.prepare('DELETE FROM schema_migrations WHERE version > ?').run(OLD_SCHEMA);
  db.close();
}
