/**
 * A SQLite file written by an older schema is migrated off the event loop (store/sqlite/migrate-worker.ts): while
 * it migrates, `serve` answers /healthz 200 and /readyz 503 saying so, as a Kubernetes probe needs (one that gets
 * no answer restarts the pod, mid-migration, again and again). The migration is held deterministically by another
 * connection holding the file's write lock (SQLite waits for it, up to its 5 s busy timeout), as a long index build
 * would hold it. A stop meanwhile leaves the file at a whole version: the next start migrates it, every event kept.
 */
import { once } from 'node:events';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, expect, it } from 'vitest';
import { MIGRATIONS } from '../src/store/sqlite/index.ts';
import { migrateOnWorker, schemaChanging } from '../src/store/sqlite/schema.ts';
import { tempDir } from './helpers.ts';
import { OLD_SCHEMA, OLD_SCHEMA_EVENTS as EVENTS, oldSchemaFile } from './support/old-schema.ts';
import { logEntries, spawnReplica, timedFetch, waitFor, type SpawnedReplica } from './support/serve-process.ts';

const MIGRATING = 'migrating the database schema';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A temporary folder (removed after the test) holding hookwatch.db at schema OLD_SCHEMA (oldSchemaFile). */
async function oldSchemaInTemp(): Promise<{ dir: string; path: string }> {
  const tmp = tempDir('hookwatch-migrate-');
  cleanups.push(() => tmp.cleanup());
  const path = join(tmp.dir, 'hookwatch.db');
  await oldSchemaFile(path);
  return { dir: tmp.dir, path };
}

function fileState(path: string): { version: number; events: number } {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const { v } = db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number };
    const { n } = db.prepare('SELECT COUNT(*) AS n FROM events').get() as { n: number };
    return { version: v, events: n };
  } finally {
    db.close();
  }
}

/** Another connection holding the file's write lock until `release`: the migration waits for it. */
function holdWriteLock(path: string): { release(): void } {
  const db = new DatabaseSync(path);
  db.exec('BEGIN IMMEDIATE');
  let held = true;
  const release = (): void => {
    if (!held) return;
    held = false;
    db.exec('ROLLBACK');
    db.close();
  };
  cleanups.push(release);
  return { release };
}

/** `serve` on the file, on fixed free ports (known before it has started), killed after the test. */
function spawnServe(dir: string, path: string): Promise<SpawnedReplica> {
  return spawnReplica({ db: path, cwd: dir, defer: (fn) => void cleanups.push(fn) });
}

/** /readyz's status and reason, answered within a probe's second. */
async function readiness(httpUrl: string): Promise<{ status: number | 'no answer'; reason?: string }> {
  try {
    const res = await fetch(`${httpUrl}/readyz`, { signal: AbortSignal.timeout(1000) });
    const { reason } = (await res.json()) as { reason?: string };
    return { status: res.status, ...(reason === undefined ? {} : { reason }) };
  } catch {
    return { status: 'no answer' };
  }
}

/** Waits until /readyz says the schema is migrating, then checks /healthz answers as a liveness probe would. */
async function whileMigrating(s: { httpUrl: string }): Promise<void> {
  await waitFor('/readyz saying the schema migrates', async () => ((await readiness(s.httpUrl)).reason === MIGRATING ? true : undefined), 30_000, 50);
  expect(await timedFetch(`${s.httpUrl}/healthz`, 1000)).toMatchObject({ status: 200 });
  expect(await readiness(s.httpUrl)).toEqual({ status: 503, reason: MIGRATING });
  // The API has no store to read yet: retry later.
  expect(await timedFetch(`${s.httpUrl}/api/v1/hooks`, 1000)).toMatchObject({ status: 503 });
}

it('answers /healthz 200 and /readyz 503 "migrating the database schema" while it migrates, then serves every event', async () => {
  const { dir, path } = await oldSchemaInTemp();
  const lock = holdWriteLock(path);
  const s = await spawnServe(dir, path);
  await whileMigrating(s);
  // Still at the old schema: the migration waits for the lock.
  expect(fileState(path)).toEqual({ version: OLD_SCHEMA, events: EVENTS });
  const heldMs = 500;
  await new Promise((r) => setTimeout(r, heldMs));
  lock.release();
  const served = await s.starting;
  await waitFor('/readyz ready once migrated', async () => ((await readiness(served.httpUrl)).status === 200 ? true : undefined), 30_000, 50);
  expect(fileState(path)).toEqual({ version: MIGRATIONS.length, events: EVENTS });
  // One line, as on PostgreSQL, with how long the migration took: at least as long as the lock held it.
  const migrated = logEntries(s.lines(), 'sqlite schema migrated');
  expect(migrated).toEqual([expect.objectContaining({ from: OLD_SCHEMA, to: MIGRATIONS.length, durationMs: expect.any(Number) })]);
  expect(migrated[0]?.['durationMs']).toBeGreaterThanOrEqual(heldMs);
  const hooks = (await (await fetch(`${served.httpUrl}/api/v1/hooks`)).json()) as unknown;
  expect(JSON.stringify(hooks)).toContain('PostToolUse:Bash');
  await served.stop();
}, 120_000);

it('stops on SIGTERM while it migrates, leaving the file at a whole version; the next start migrates it', async () => {
  const { dir, path } = await oldSchemaInTemp();
  const lock = holdWriteLock(path);
  const s = await spawnServe(dir, path);
  await whileMigrating(s);
  const exited = once(s.child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  s.child.kill('SIGTERM');
  const [code, signal] = await exited;
  // Ended by the signal, at once: an exit would first wait out the SQL statement under way (here the busy timeout).
  expect({ code, signal }).toEqual({ code: null, signal: 'SIGTERM' });
  expect(logEntries(s.lines(), 'signal during the schema migration: exiting now; the version under way is rolled back')).toEqual([expect.objectContaining({ signal: 'SIGTERM' })]);
  lock.release();
  expect(fileState(path)).toEqual({ version: OLD_SCHEMA, events: EVENTS });

  expect(logEntries(s.lines(), 'sqlite schema migrated')).toEqual([]);

  const again = await spawnServe(dir, path);
  const served = await again.starting;
  expect(fileState(path)).toEqual({ version: MIGRATIONS.length, events: EVENTS });
  expect(logEntries(again.lines(), 'sqlite schema migrated')).toEqual([expect.objectContaining({ from: OLD_SCHEMA, to: MIGRATIONS.length })]);
  await served.stop();
}, 120_000);

/**
 * Grows the old-schema file at `path` to `events` events, every one arrived late: its first migration left (an index
 * of the late arrivals) then works for seconds, its one statement holding the file's write lock all along.
 */
function growOldSchemaFile(path: string, events: number): void {
  const db = new DatabaseSync(path);
  try {
    const cols = (db.prepare('PRAGMA table_info(events)').all() as { name: string }[]).map((c) => c.name);
    const value = (c: string): string => (c === 'id' ? 'NULL' : c === 'key' ? "unhex(printf('%032x', s.i))" : c === 'time_ms' ? `e.time_ms - ${events} + s.i` : c === 'received_ms' ? `e.time_ms + 600000 + (s.i * 2654435761) % ${events}` : `e.${c}`);
    db.exec(`BEGIN; WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ${events - EVENTS})
      INSERT INTO events (${cols.join(', ')}) SELECT ${cols.map(value).join(', ')} FROM s, (SELECT * FROM events LIMIT 1) AS e; COMMIT;`);
  } finally {
    db.close();
  }
}

it('stops within seconds on SIGTERM while a long migration statement runs, the version rolled back; the next start migrates it', async () => {
  const { dir, path } = await oldSchemaInTemp();
  const events = 4_000_000;
  growOldSchemaFile(path, events);
  const s = await spawnServe(dir, path);
  await whileMigrating(s);
  // Well into the statement that builds the index.
  await new Promise((r) => setTimeout(r, 300));
  const exited = once(s.child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  const t0 = performance.now();
  s.child.kill('SIGTERM');
  const [code, signal] = await exited;
  const tookMs = performance.now() - t0;
  // eslint-disable-next-line no-console
  console.log(`SIGTERM during the migration of ${events} events: exited ${code ?? signal} after ${Math.round(tookMs)} ms`);
  expect({ code, signal }).toEqual({ code: null, signal: 'SIGTERM' });
  expect(logEntries(s.lines(), 'signal during the schema migration: exiting now; the version under way is rolled back')).toEqual([expect.objectContaining({ signal: 'SIGTERM' })]);
  expect(logEntries(s.lines(), 'sqlite schema migrated')).toEqual([]);
  expect(fileState(path)).toEqual({ version: OLD_SCHEMA, events });
  // Not after the statement under way: seconds of building the index were still ahead of it.
  expect(tookMs).toBeLessThan(1000);

  const again = await spawnServe(dir, path);
  const served = await again.starting;
  expect(fileState(path)).toEqual({ version: MIGRATIONS.length, events });
  expect(logEntries(again.lines(), 'sqlite schema migrated')).toEqual([expect.objectContaining({ from: OLD_SCHEMA, to: MIGRATIONS.length })]);
  await served.stop();
}, 180_000);

/** Blocks this thread (its event loop: no message, no signal handled) until `done`, or `ms` have passed. */
function blockUntil(done: () => boolean, ms: number): boolean {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  const until = performance.now() + ms;
  while (!done() && performance.now() < until) Atomics.wait(pause, 0, 0, 10);
  return done();
}

it('says the file is changing from the moment the worker begins the migration, before its word reaches the event loop', async () => {
  const { path } = await oldSchemaInTemp();
  const lock = holdWriteLock(path);
  expect(schemaChanging()).toBe(false);
  let told = false;
  const migrated = migrateOnWorker({ path, synchronous: 'full', cacheBytes: 2 * 1024 * 1024, dimensions: [] }, () => (told = true));
  // A signal handled before the worker's message (the event loop busy meanwhile, here blocked) must see the
  // migration under way, or it would exit and wait out the statement. Within the busy timeout (5 s): the worker
  // waits for the lock meanwhile.
  expect(blockUntil(schemaChanging, 20_000)).toBe(true);
  expect(told).toBe(false);
  lock.release();
  expect(await migrated).toEqual(expect.objectContaining({ from: OLD_SCHEMA, to: MIGRATIONS.length }));
  expect(told).toBe(true);
  expect(schemaChanging()).toBe(false);
  expect(fileState(path)).toEqual({ version: MIGRATIONS.length, events: EVENTS });
}, 60_000);

it('exits 1 naming the file and what to do when another process keeps it locked past the busy timeout', async () => {
  const { dir, path } = await oldSchemaInTemp();
  holdWriteLock(path);
  const s = await spawnServe(dir, path);
  await whileMigrating(s);
  const [code] = (await once(s.child, 'exit')) as [number | null];
  expect(code).toBe(1);
  // The file, and what to do: SQLite's own "database is locked" names neither.
  expect(s.lines()).toContain(`hookwatch: another process writes to db ${path}: it held the file's write lock past the busy timeout (5s), and SQLite does not say which; let it finish or stop it, then start hookwatch again`);
  expect(fileState(path)).toEqual({ version: OLD_SCHEMA, events: EVENTS });
}, 120_000);

it('exits 1 saying so, naming the file, for a file whose schema is newer than this hookwatch, the file untouched', async () => {
  const { dir, path } = await oldSchemaInTemp();
  const db = new DatabaseSync(path);
  db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)').run(MIGRATIONS.length + 1);
  db.close();
  const s = await spawnServe(dir, path);
  const [code] = (await once(s.child, 'exit')) as [number | null];
  expect(code).toBe(1);
  expect(s.lines()).toContain(`hookwatch: db ${path}: the database schema is version ${MIGRATIONS.length + 1}, newer than this hookwatch (${MIGRATIONS.length}); upgrade hookwatch`);
  expect(fileState(path)).toEqual({ version: MIGRATIONS.length + 1, events: EVENTS });
}, 120_000);
