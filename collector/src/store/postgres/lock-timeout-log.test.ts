/**
 * An ingest given up on a lock on PostgreSQL is counted and logged with the bound it waited: the partition DDL's
 * (another replica making a day's partition) is not the ingest transaction's. What the throttled line holds back
 * is written when the store closes.
 */
import pg from 'pg';
import { expect, it } from 'vitest';
import { hookId } from '../../hooks/extract.ts';
import type { HookEvent } from '../../hooks/model.ts';
import { useTestServer } from '../../../test/support/postgres/fixture.ts';
import { recordingLogger } from '../../../test/support/recording-logger.ts';
import { PARTITION_LOCK_KEY, PostgresStore } from './index.ts';

const DAY = 86_400_000;
const pgServer = useTestServer();
const MESSAGE = 'postgres ingest gave up waiting for a lock another transaction holds; answered 503 with Retry-After';

function execution(key: string, timeMs: number): HookEvent {
  return {
    kind: 'complete', dedupKey: `k-${key}`, hookId: hookId('PostToolUse', 'PostToolUse:Lock'), hookEvent: 'PostToolUse', hookName: 'PostToolUse:Lock',
    timeMs, numHooks: 1, numSuccess: 1, numBlocking: 0, numNonBlockingError: 0, numCancelled: 0, durationMs: 10,
    stdoutChars: 1000, additionalContextChars: null, systemMessageChars: null, initialUserMessageChars: null, outputsPersisted: 0,
    sizesKnown: true, status: 'ok', serviceName: 'claude-code', serviceVersion: '2.1.332', sessionId: 's', userId: 'u', userEmail: '',
    userAccountUuid: '', organizationId: '', terminalType: '', source: 'otlp', extra: {},
  };
}

it('logs an ingest given up on the partition lock with the partition DDL\'s wait, and writes what it held back on close', async () => {
  const url = await pgServer.server().createDatabase();
  const { logger, lines } = recordingLogger();
  const store = pgServer.track(await PostgresStore.open({ url, poolSize: 2, logger }));
  // Another replica making a partition holds the lock; events of days without a partition wait for it.
  const other = new pg.Client({ connectionString: url });
  await other.connect();
  try {
    await other.query('SELECT pg_advisory_lock($1)', [PARTITION_LOCK_KEY]);
    const day = Math.floor(Date.now() / DAY) * DAY;
    for (const ago of [20, 21]) await expect(store.ingest([execution(String(ago), day - ago * DAY)])).rejects.toThrow(/lock timeout/);
  } finally {
    await other.end();
  }
  expect(store.lockTimeouts()).toBe(2);
  const said = (): Record<string, unknown>[] => lines.filter((l) => l.msg.startsWith(MESSAGE)).map((l) => JSON.parse(l.msg.slice(MESSAGE.length)) as Record<string, unknown>);
  // The first at once, the second held back (at most one line every 10 s).
  expect(said()).toEqual([expect.objectContaining({ waitedMs: 1000, timeouts: 1 })]);
  await store.close();
  expect(said()).toEqual([expect.objectContaining({ waitedMs: 1000, timeouts: 1 }), expect.objectContaining({ waitedMs: 1000, timeouts: 1 })]);
});
