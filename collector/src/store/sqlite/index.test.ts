/** The SQLite store's reuse of closed rollup segments must never serve a stale answer. */
import { copyFileSync, existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { extractHookEvents } from '../../hooks/extract.ts';
import type { LogsRequest } from '../../otlp/model.ts';
import { tempDir } from '../../../test/helpers.ts';
import { openSqlite, WAL_SIZE_LIMIT_BYTES } from './database.ts';
import { LATE_ARRIVAL_EVENTS, LATE_PERSISTED_EVENTS, SqliteStore } from './index.ts';
import { lateArrivalsQuery, latePersistedQuery } from '../sql.ts';
import { loadHistory } from '../../../test/support/history.ts';
import { recordingLogger } from '../../../test/support/recording-logger.ts';
import { Retention, registerRetentionMetrics } from '../retention.ts';
import { MetricsRegistry } from '../../telemetry/metrics.ts';
import { parseExposition, sampleValue } from '../../../test/support/prometheus-text.ts';
import { serveApi } from '../../../test/support/api-server.ts';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

const DAY = 86_400_000;

function events(timeMs: number, seq: number, persisted: number, team = 'platform') {
  const attrs = new Map<string, string>(Object.entries({
    'event.name': 'hook_execution_complete', hook_event: 'Stop', hook_name: 'Stop', 'session.id': 'cache', 'event.sequence': String(seq),
    'event.timestamp': new Date(timeMs).toISOString(), num_hooks: '1', num_success: '1', stdout_chars: '10', num_outputs_persisted: String(persisted),
    team, 'user.id': `user-${seq % 2}`,
  }));
  const req: LogsRequest = { resourceLogs: [{ resource: new Map(), scopeLogs: [{ scope: { name: '', version: '' }, logRecords: [{ timeUnixNano: 0n, observedTimeUnixNano: 0n, eventName: '', body: undefined, attributes: attrs }] }] }] };
  return extractHookEvents(req, { nearThreshold: 8000, dimensions: ['team'] }).events;
}

describe('closed segments', () => {
  it('a late event in a past day and a prune both show in the next answer', async () => {
    const store = new SqliteStore({ path: join(tmp.dir, 'cache.db') });
    const now = Date.now();
    const range = { fromMs: now - 30 * DAY, toMs: now };
    await store.ingest(events(now - 10 * DAY, 1, 0));
    const first = [...(await store.hookCounters(range)).values()][0]!;
    expect(first.executions).toBe(1);
    // Asked again: served from the closed day segment.
    expect([...(await store.hookCounters(range)).values()][0]!.executions).toBe(1);
    // A late event 10 days back lands in that closed segment.
    await store.ingest(events(now - 10 * DAY + 1000, 2, 1));
    const second = [...(await store.hookCounters(range)).values()][0]!;
    expect(second.executions).toBe(2);
    expect(second.outputsPersisted).toBe(1);
    // An event in the open minute segment is merged with the kept day segment; merging must never change
    // what is kept, so the same question gets the same answer every time.
    const openRange = { fromMs: range.fromMs, toMs: now + 60_000 };
    await store.ingest(events(now, 3, 0));
    for (let i = 0; i < 3; i++) expect([...(await store.hookCounters(openRange)).values()][0]!.executions).toBe(3);
    const versions = await store.clientVersions(range);
    expect(versions[0]!.executions).toBe(3);
    // A prune removes the old rollups: the answer must follow (only the event of the open hour is left).
    await store.prune(now - 5 * DAY, now - 5 * DAY);
    expect([...(await store.hookCounters(openRange)).values()][0]!.executions).toBe(1);
    await store.close();
  });

  it('an event for a minute that has just closed shows in the next answer', async () => {
    const store = new SqliteStore({ path: join(tmp.dir, 'minute.db') });
    const now = Date.now();
    const minuteStart = Math.floor(now / 60_000) * 60_000;
    const range = { fromMs: now - DAY, toMs: now + 60_000 };
    await store.ingest(events(minuteStart - 90_000, 1, 0));
    expect([...(await store.hookCounters(range)).values()][0]!.executions).toBe(1);
    // Arrives late: the last minute (kept once closed) and the hour before it both change.
    await store.ingest(events(minuteStart - 1, 2, 1));
    await store.ingest(events(minuteStart - 61_000, 3, 0));
    for (let i = 0; i < 2; i++) {
      const c = [...(await store.hookCounters(range)).values()][0]!;
      expect(c.executions).toBe(3);
      expect(c.outputsPersisted).toBe(1);
    }
    await store.close();
  });

  it('filtered views and breakdowns kept from earlier calls follow late events and prunes', async () => {
    const store = new SqliteStore({ path: join(tmp.dir, 'filtered.db'), dimensions: ['team'] });
    const now = Date.now();
    const range = { fromMs: now - 30 * DAY, toMs: now, filters: { team: 'payments' } };
    await store.ingest([...events(now - 10 * DAY, 1, 0, 'payments'), ...events(now - 9 * DAY, 2, 0, 'platform')]);
    const count = async (): Promise<number | undefined> => [...(await store.hookCounters(range)).values()][0]?.executions;
    const id = [...(await store.hookCounters({ fromMs: range.fromMs, toMs: now })).keys()][0]!;
    const byUser = async (): Promise<string> => (await store.breakdown(id, 'user.id', { fromMs: range.fromMs, toMs: now })).map((r) => `${r.value}:${r.executions}`).sort().join(' ');
    for (let i = 0; i < 2; i++) {
      expect(await count()).toBe(1);
      expect(await byUser()).toBe('user-0:1 user-1:1');
    }
    // Late events in the closed days each answer was kept for.
    await store.ingest([...events(now - 10 * DAY + 1000, 3, 1, 'payments'), ...events(now - 20 * DAY, 5, 0, 'payments')]);
    expect(await count()).toBe(3);
    expect(await byUser()).toBe('user-0:1 user-1:3');
    // A prune removes the older events: the kept answers must follow.
    await store.prune(now - 15 * DAY, now - 15 * DAY);
    expect(await count()).toBe(2);
    expect(await byUser()).toBe('user-0:1 user-1:2');
    await store.close();
  });

  it('asks only for one hook when given its id', async () => {
    const store = new SqliteStore({ path: join(tmp.dir, 'one.db') });
    const now = Date.now();
    await store.ingest(events(now - DAY, 1, 0));
    const id = [...(await store.hookCounters({ fromMs: now - 2 * DAY, toMs: now })).keys()][0]!;
    expect([...(await store.hookCounters({ fromMs: now - 2 * DAY, toMs: now, hookId: id })).keys()]).toEqual([id]);
    expect((await store.hookCounters({ fromMs: now - 2 * DAY, toMs: now, hookId: '0000000000000000' })).size).toBe(0);
    await store.close();
  });
});

describe('group commit', () => {
  it('batches handed over in one turn share one transaction, and each gets its own answer', async () => {
    const store = new SqliteStore({ path: join(tmp.dir, 'group.db') });
    const now = Date.now();
    const a = [...events(now, 1, 0), ...events(now, 2, 1)];
    const b = [...events(now, 2, 1), ...events(now, 3, 0)];
    const c = events(now, 4, 0);
    const before = store.commits;
    const [ra, rb, rc] = await Promise.all([store.ingest(a), store.ingest(b), store.ingest(c)]);
    expect(store.commits - before).toBe(1);
    expect([ra.inserted.length, ra.duplicates]).toEqual([2, 0]);
    // b repeats one of a's events: a duplicate, not counted twice.
    expect([rb.inserted.length, rb.duplicates]).toEqual([1, 1]);
    expect([rc.inserted.length, rc.duplicates]).toEqual([1, 0]);
    const h = [...(await store.hookCounters({ fromMs: now - 60_000, toMs: now + 60_000 })).values()][0]!;
    expect(h.executions).toBe(4);
    expect(h.outputsPersisted).toBe(1);
    // Batches still waiting when the store closes are committed first.
    const late = store.ingest(events(now, 5, 0));
    await store.close();
    expect((await late).inserted.length).toBe(1);
    const reopened = new SqliteStore({ path: join(tmp.dir, 'group.db') });
    expect([...(await reopened.hookCounters({ fromMs: now - 60_000, toMs: now + 60_000 })).values()][0]!.executions).toBe(5);
    await reopened.close();
  });
});


describe('retention', () => {
  it('answers ingest while a large pass deletes, between its batches', { timeout: 120_000 }, async () => {
    const store = new SqliteStore({ path: join(tmp.dir, 'retention.db') });
    try {
      const now = Date.now();
      // Batches of events, minute rollups and attribute rollups for retention to delete (5,000 rows a statement).
      await loadHistory(store, { events: 40_000, fromMs: now - 20 * DAY, toMs: now - 10 * DAY, hooks: 200 });
      const order: string[] = [];
      const pruned = store.prune(now - 5 * DAY, now - 5 * DAY).then((r) => {
        order.push('prune');
        return r;
      });
      // An OTLP request arriving as the pass starts: its 200 waits for this commit, not for the whole pass.
      const ingested = store.ingest(events(now, 1, 0)).then((r) => {
        order.push('ingest');
        return r;
      });
      const [r, i] = await Promise.all([pruned, ingested]);
      expect(r.events).toBe(40_000);
      expect(i.inserted).toHaveLength(1);
      expect(order).toEqual(['ingest', 'prune']);
      expect([...(await store.hookCounters({ fromMs: now - 30 * DAY, toMs: now + 60_000 })).values()].map((c) => c.executions)).toEqual([1]);
    } finally {
      await store.close();
    }
  });

  it('a pass stopped while it runs ends between two batches; the next pass deletes the rest', { timeout: 180_000 }, async () => {
    const now = Date.now();
    // Two copies of one file: a pass run to its end on one, the same pass stopped on the other.
    const whole = join(tmp.dir, 'retention-whole.db');
    const seeded = new SqliteStore({ path: whole });
    await loadHistory(seeded, { events: 40_000, fromMs: now - 20 * DAY, toMs: now - 10 * DAY, hooks: 200 });
    await seeded.close();
    const stopped = join(tmp.dir, 'retention-stopped.db');
    for (const suffix of ['', '-wal']) if (existsSync(whole + suffix)) copyFileSync(whole + suffix, stopped + suffix);
    const retention = (store: SqliteStore): Retention => new Retention({
      store, eventsMs: 5 * DAY, rollupsMs: 5 * DAY, isLeader: () => true, logger: recordingLogger().logger, now: () => now,
    });
    // Rows of every table, to tell a finished pass from a stopped one.
    const rows = (path: string): Record<string, number> => {
      const db = new DatabaseSync(path, { readOnly: true });
      try {
        const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all().map((r) => String(r['name']));
        return Object.fromEntries(tables.map((t) => [t, Number(db.prepare(`SELECT count(*) AS n FROM "${t}"`).get()?.['n'])]));
      } finally {
        db.close();
      }
    };

    const store = new SqliteStore({ path: stopped });
    try {
      const r = retention(store);
      const metrics = new MetricsRegistry();
      registerRetentionMetrics(metrics, r, store.kind);
      const running = r.run();
      // The pass has begun deleting (its first batch is committed, the event loop has its turn): stopped there,
      // in the pause, with what the file holds at that moment noted.
      await new Promise((resolve) => setImmediate(resolve));
      const atStop = rows(stopped);
      const t0 = performance.now();
      await r.stop();
      const stoppedMs = performance.now() - t0;
      await running;
      // No batch ran after the stop: the pass ended at the pause it was stopped in.
      expect(rows(stopped)).toEqual(atStop);
      const left = atStop['events']!;
      expect(left).toBeGreaterThan(0);
      expect(left).toBeLessThan(40_000);
      // Not a success (old rows are still stored), nor a failure; what it deleted is counted.
      expect(r.stats).toMatchObject({ stopped: 1, succeeded: 0, failed: 0, lastSuccessMs: undefined });
      const f = parseExposition(await metrics.render());
      expect(sampleValue(f, 'hookwatch_retention_runs_total', { outcome: 'stopped' })).toBe(1);
      expect(sampleValue(f, 'hookwatch_retention_removed_total', { kind: 'events' })).toBe(40_000 - left);

      // The same pass on the other copy, to its end: stop() waited a small part of it.
      const other = new SqliteStore({ path: whole });
      let wholeMs: number;
      try {
        const t1 = performance.now();
        await retention(other).run();
        wholeMs = performance.now() - t1;
      } finally {
        await other.close();
      }
      expect(stoppedMs / wholeMs, `stop() took ${Math.round(stoppedMs)} ms, the whole pass took ${Math.round(wholeMs)} ms`).toBeLessThan(1 / 3);

      // The next pass deletes the rest: the file ends as the one whose pass was not stopped.
      const next = retention(store);
      await next.run();
      expect(next.stats).toMatchObject({ succeeded: 1, stopped: 0 });
      expect(next.stats.removed.events).toBe(left);
      expect(rows(stopped)).toEqual(rows(whole));
      expect(rows(stopped)['events']).toBe(0);
    } finally {
      await store.close();
    }
  });
});

describe('opening the file', () => {
  it('a path where no file can be created is refused with the path named, as a retryable fault', () => {
    // /proc takes no new files, whoever runs the test (root included).
    const path = '/proc/hookwatch-cannot-create.db';
    let err: unknown;
    try {
      new SqliteStore({ path });
    } catch (e) {
      err = e;
    }
    expect((err as Error).message).toContain(path);
    expect((err as Error).name).toBe('StoreUnavailableError');
  });
});

describe('opening a file another connection holds', () => {
  it('refuses after SQLite waits its 5 s, and leaves no connection open behind the error', { timeout: 20_000 }, () => {
    const path = join(tmp.dir, 'held.db');
    const descriptors = (): number => readdirSync('/proc/self/fd').length;
    const before = descriptors();
    const holder = new DatabaseSync(path);
    holder.exec('PRAGMA journal_mode = DELETE; CREATE TABLE t (x INTEGER); BEGIN EXCLUSIVE; INSERT INTO t VALUES (1)');
    try {
      expect(() => openSqlite(path)).toThrow(/locked|busy/i);
    } finally {
      holder.exec('COMMIT');
      holder.close();
    }
    // SQLite keeps a closed connection's file open while another one of this process holds a lock on it.
    expect(descriptors()).toBeLessThanOrEqual(before);
    const db = openSqlite(path);
    expect((db.prepare('PRAGMA journal_mode').get() as { journal_mode: string }).journal_mode).toBe('wal');
    db.close();
  });
});

describe('the write-ahead log', () => {
  it('grown while a reader held it (as a backup does), is cut back once the reader lets go and a checkpoint runs', { timeout: 180_000 }, async () => {
    const path = join(tmp.dir, 'wal.db');
    const store = new SqliteStore({ path });
    try {
      const now = Date.now();
      const walBytes = (): number => statSync(`${path}-wal`).size;
      // A backup's read transaction: begun before the writes, held until they end; no checkpoint gets past it.
      const reader = new DatabaseSync(path, { readOnly: true });
      reader.exec('BEGIN');
      reader.prepare('SELECT COUNT(*) AS n FROM events').get();
      await loadHistory(store, { events: 120_000, fromMs: now - 2 * DAY, toMs: now - DAY, hooks: 50 });
      const grown = walBytes();
      expect(grown).toBeGreaterThan(2 * WAL_SIZE_LIMIT_BYTES);
      reader.exec('COMMIT');
      reader.close();
      // Commits go on: the first past the checkpoint size folds the WAL into the file, the next starts it over.
      const sizes: number[] = [];
      for (let seq = 1; seq <= 20; seq++) {
        await store.ingest(events(now, seq, 0));
        sizes.push(walBytes());
      }
      expect(sizes.at(-1)).toBeLessThanOrEqual(WAL_SIZE_LIMIT_BYTES);
      // Cut at once, not worn down: the second commit after the reader let go starts the WAL over.
      expect(sizes.slice(1).every((size) => size <= WAL_SIZE_LIMIT_BYTES)).toBe(true);
      expect([...(await store.hookCounters({ fromMs: now - 60_000, toMs: now + 60_000 })).values()].map((c) => c.executions)).toEqual([20]);
    } finally {
      await store.close();
    }
  });
});

describe('query plans', () => {
  it('the late-arrival queries of the persisted and hook_limit alerts read the partial arrival indexes, not the table', async () => {
    const path = join(tmp.dir, 'plans.db');
    const store = new SqliteStore({ path, dimensions: [] });
    await store.ingest(events(Date.parse('2026-11-30T10:00:00Z'), 1, 1));
    await store.close();
    const db = new DatabaseSync(path, { readOnly: true });
    try {
      // Split by a dimension (a rule's groupBy), each late event's set is looked up by its id: still no scan.
      const byTeam = (p: (n: number) => string): string => latePersistedQuery(p, `json_extract(extra, '$."team"')`, LATE_PERSISTED_EVENTS);
      const persisted = (p: (n: number) => string): string => latePersistedQuery(p, undefined, LATE_PERSISTED_EVENTS);
      // The persisted rule's, on every ingest with an output over the cap: the events more than LATE_ARRIVAL_MS late
      // through their own index, the others among the arrivals over the cap of LATE_ARRIVAL_MS only, never every
      // output over the cap the window received, nor every event counted under an overflow hook (at
      // store.maxHooks, most of the window's arrivals). The hook_limit alert's, on each ingest that folds: the
      // late events likewise, the others among the arrivals of LATE_ARRIVAL_MS only.
      const cases = [
        ['latePersistedQuery', persisted, ['events_late_arrival', 'events_over_arrival']],
        ['latePersistedQuery by a dimension', byTeam, ['events_late_arrival', 'events_over_arrival']],
        ['lateArrivalsQuery', (p: (n: number) => string) => lateArrivalsQuery(p, LATE_ARRIVAL_EVENTS), ['events_late_arrival', 'events_arrival']],
      ] as const;
      for (const [name, query, indexes] of cases) {
        const plan = (db.prepare(`EXPLAIN QUERY PLAN ${query((n) => `?${n}`)}`).all(0, 1, 2) as { detail: string }[]).map((r) => r.detail).join('; ');
        for (const index of indexes) expect(plan, name).toContain(`SEARCH events USING INDEX ${index} (received_ms>? AND received_ms<?)`);
        expect(plan, name).not.toMatch(/SCAN (events|attr_sets)\b/);
      }
    } finally {
      db.close();
    }
  });

  it('the fleet chart of 30 days reads every hook\'s hours and days through the primary key, not a row at a time through the bucket index', async () => {
    const store = new SqliteStore({ path: ':memory:', dimensions: ['team'] });
    const now = Date.now();
    await loadHistory(store, { events: 2000, fromMs: now - 30 * DAY, toMs: now, hooks: 12 });
    const api = await serveApi(store, now);
    // The statements the answer prepares (a ':memory:' store reads on its own connection).
    const prepared: [DatabaseSync, string][] = [];
    const prepare = DatabaseSync.prototype.prepare;
    DatabaseSync.prototype.prepare = function (this: DatabaseSync, sql: string) {
      prepared.push([this, sql]);
      return prepare.call(this, sql);
    } as typeof prepare;
    try {
      // As the overview asks it: the riskiest hooks listed, the others summed (fleetRest), ranked on 30 days' counters.
      const res = await fetch(`${api.base}/api/v1/fleet/series?from=now-30d&to=now&step=43200&limit=4`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as { total: number; rest: { hooks: number } | null };
      expect(body.total).toBeGreaterThan(4);
      expect(body.rest?.hooks).toBe(body.total - 4);
    } finally {
      DatabaseSync.prototype.prepare = prepare;
      await api.close();
    }
    try {
      const plans = new Map<string, string[]>();
      for (const [db, sql] of prepared) {
        const table = /\bFROM (rollup_1[hd])\b/.exec(sql)?.[1];
        if (!table) continue;
        const plan = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as { detail: string }[]).map((r) => r.detail).join('; ');
        plans.set(table, [...(plans.get(table) ?? []), plan]);
      }
      // The counters' days and hours, the listed hooks' hours and the rest's: each hook's rows in key order. Through
      // the bucket index each row is looked up in the table again: over 10,000 hooks and 30 days, seconds.
      expect([...plans.keys()].sort()).toEqual(['rollup_1d', 'rollup_1h']);
      for (const [table, list] of plans) {
        expect(list.length, table).toBeGreaterThanOrEqual(table === 'rollup_1h' ? 3 : 1);
        for (const plan of list) {
          expect(plan, table).toContain(`SEARCH ${table} USING PRIMARY KEY (hook_id=? AND bucket>? AND bucket<?)`);
          expect(plan, table).not.toContain(`${table}_bucket`);
        }
      }
    } finally {
      await store.close();
    }
  });
});
