/**
 * Backing up the PostgreSQL store as docs/postgres.md says (*Backup and restore*): hookwatch serves a PostgreSQL
 * database and keeps taking telemetry from the real OpenTelemetry exporter while the real `pg_dump -Fc` runs; the
 * dump restored with `pg_restore --no-owner` into a new database holds every event acknowledged before the dump
 * started, and a hookwatch started on it serves the hooks, series, alerts and silences the original served, takes
 * the lease, ingests (into partitions it creates) and sends no notification delivered before the dump again: only
 * those the dump holds undelivered (same webhook-id), then the resolutions.
 * `hookwatch backup` on a PostgreSQL URL names that section.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from './helpers.ts';
import { ALERTING, firing, hookwatchBackup, notificationsAcrossRestore, run, seedHistory, Stream, views } from './support/backup.ts';
import { useTestServer } from './support/postgres/fixture.ts';
import { startWebhookReceiver } from './support/postgres/replicas.ts';
import { findPostgresBin, queryOnce } from './support/postgres/server.ts';
import { emitExecutions } from './support/service.ts';

const DAY_MS = 86_400_000;
const pg = useTestServer();
const tmp = mkdtempSync(join(tmpdir(), 'hookwatch-pg-backup-'));
let services: TestService[] = [];
afterEach(async () => {
  for (const s of services) await s.close();
  services = [];
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** `pg_ctl`'s neighbour (pg_dump, pg_restore) run on a database URL, as an operator runs it; the password in the environment. */
async function pgTool(tool: string, args: string[], url: string): Promise<{ stdout: string; stderr: string }> {
  const u = new URL(url);
  const env = { PATH: process.env['PATH'] ?? '', PGHOST: u.hostname, PGPORT: u.port, PGUSER: decodeURIComponent(u.username), PGPASSWORD: decodeURIComponent(u.password), PGDATABASE: u.pathname.slice(1) };
  return run(join(findPostgresBin(), tool), args, { env, timeout: 120_000 });
}

/** A service on a PostgreSQL database, with its own folder (removed when it closes). */
async function serveOn(url: string, name: string, yaml: string): Promise<TestService> {
  const dir = join(tmp, name);
  mkdirSync(dir);
  writeFileSync(join(dir, 'hookwatch.yaml'), yaml);
  const s = await startTestService({ HOOKWATCH_DB: url, HOOKWATCH_CONFIG: join(dir, 'hookwatch.yaml'), HOOKWATCH_POSTGRES_LEASE_TTL: '2s' }, { dir });
  services.push(s);
  return s;
}


describe('PostgreSQL backup with pg_dump and pg_restore', () => {
  it('a dump taken while replicas ingest restores into a new database that serves the same views and ingests on', async () => {
    const webhook = await startWebhookReceiver();
    pg.defer(() => webhook.close());
    const yaml = `${ALERTING}  receivers:\n    - { name: ops, type: webhook, url: ${webhook.url} }\n`;
    const now = Date.now();
    const range = `from=${new Date(now - 3_600_000).toISOString()}&to=${new Date(now + 3_600_000).toISOString()}`;
    const originalUrl = await pg.server().createDatabase('hookwatch_original');
    const original = await serveOn(originalUrl, 'original', yaml);

    await seedHistory(original, now, 20);
    // Their notifications are delivered, and settled in the outbox, before the dump.
    const outbox = async (): Promise<string> => {
      const [o] = await queryOnce<{ pending: number; delivered: number }>(originalUrl, "SELECT count(*) FILTER (WHERE done IS NULL)::int AS pending, count(*) FILTER (WHERE done = 'delivered')::int AS delivered FROM alert_notifications");
      return `${o?.pending} pending, ${o?.delivered} delivered, ${webhook.deliveries.length} received`;
    };
    await expect.poll(outbox, { timeout: 15_000 }).toMatch(/^0 pending, ([1-9]\d*) delivered, \1 received$/);
    const deliveredBefore = webhook.deliveries.map((d) => d.webhookId);
    expect(deliveredBefore.length).toBeGreaterThan(0);
    const seen = await views(original.httpUrl, range, ['Stop:live']);

    // Telemetry keeps arriving while pg_dump runs.
    const live = new Stream(original.otlpHttpUrl, 'Stop:live', now - 40 * 60_000);
    const streaming = live.send(100_000, 20);
    await expect.poll(() => live.acked, { timeout: 10_000 }).toBeGreaterThan(100);
    const ackedBefore = live.acked;
    const dump = join(tmp, 'hookwatch.dump');
    const dumped = await pgTool('pg_dump', ['--format=custom', `--file=${dump}`], originalUrl);
    const ackedAfter = live.acked;
    live.stop();
    await streaming;
    await live.shutdown();
    expect(dumped.stderr).toBe('');
    expect(live.failures).toBe(0);
    await original.close();
    services = [];

    const restoredUrl = await pg.server().createDatabase('hookwatch_restored');
    const restoredOut = await pgTool('pg_restore', ['--no-owner', '--exit-on-error', `--dbname=${new URL(restoredUrl).pathname.slice(1)}`, dump], restoredUrl);
    expect(restoredOut.stderr).toBe('');
    // Every event of the stream acknowledged before the dump started is there, and nothing past what was acknowledged by its end.
    const [counted] = await queryOnce<{ n: number; prefix: number }>(restoredUrl,
      'SELECT count(*)::int AS n, count(*) FILTER (WHERE time_ms < $2)::int AS prefix FROM events WHERE time_ms >= $1 AND time_ms < $3',
      [now - 40 * 60_000, now - 40 * 60_000 + ackedBefore, now - 30 * 60_000]);
    expect(counted?.prefix).toBe(ackedBefore);
    expect(counted?.n).toBeGreaterThanOrEqual(ackedBefore);
    expect(counted?.n).toBeLessThanOrEqual(ackedAfter + 20);

    const epoch = async (): Promise<number | undefined> => (await queryOnce<{ epoch: number }>(restoredUrl, "SELECT epoch::int AS epoch FROM leader_lease WHERE name = 'hookwatch'"))[0]?.epoch;
    const dumpedEpoch = await epoch();
    expect(dumpedEpoch).toBeGreaterThan(0);

    const restored = await serveOn(restoredUrl, 'restored', yaml);
    expect(await views(restored.httpUrl, range, ['Stop:live'])).toEqual(seen);

    // It ingests on: an event of a day the dump had no partition for, and a new alert that its leader evaluates.
    const today = Math.floor(now / DAY_MS);
    const backfill = new Stream(restored.otlpHttpUrl, 'Stop:backfill', (today - 10) * DAY_MS + 3_600_000);
    await backfill.send(1, 20);
    await backfill.shutdown();
    expect(backfill.acked).toBe(20);
    const partitions = (await queryOnce<{ name: string }>(restoredUrl, "SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'events'::regclass")).map((r) => r.name);
    expect(partitions).toEqual(expect.arrayContaining([`events_d${today - 10}`, `events_d${today}`, `events_d${today + 1}`, `events_d${today + 2}`]));
    const [{ n: backfilled } = { n: 0 }] = await queryOnce<{ n: number }>(restoredUrl, `SELECT count(*)::int AS n FROM events_d${today - 10}`);
    expect(backfilled).toBe(20);
    await emitExecutions(restored.otlpHttpUrl, [{ hookEvent: 'PostToolUse', hookName: 'PostToolUse:Write', stdoutChars: 15_000, outputsPersisted: 1 }]);
    await expect.poll(() => firing(restored.httpUrl), { timeout: 15_000 }).toBe(3);
    await expect.poll(() => webhook.deliveries.length, { timeout: 15_000 }).toBe(deliveredBefore.length + 1);
    // The new leader took the dump's lease over: the fencing epoch goes on from it.
    expect(await epoch()).toBe((dumpedEpoch ?? 0) + 1);
    expect(webhook.deliveries.map((d) => d.webhookId).slice(0, deliveredBefore.length)).toEqual(deliveredBefore);
    expect(webhook.deliveries.at(-1)?.labels['hook_name']).toBe('PostToolUse:Write');
  }, 180_000);

  it('a restored database notifies again only what the dump holds undelivered (same webhook-id), then the resolutions', async () => {
    const originalUrl = await pg.server().createDatabase('hookwatch_notified');
    const restoredUrl = await pg.server().createDatabase('hookwatch_notified_restored');
    const dump = join(tmp, 'notified.dump');
    let original: TestService | undefined;
    await notificationsAcrossRestore({
      serve: async (yaml) => (original = await serveOn(originalUrl, 'notified', yaml)),
      backup: async () => {
        expect((await pgTool('pg_dump', ['--format=custom', `--file=${dump}`], originalUrl)).stderr).toBe('');
      },
      stop: async () => {
        await original?.close();
        services = services.filter((s) => s !== original);
      },
      restore: async (yaml) => {
        expect((await pgTool('pg_restore', ['--no-owner', '--exit-on-error', `--dbname=${new URL(restoredUrl).pathname.slice(1)}`, dump], restoredUrl)).stderr).toBe('');
        return serveOn(restoredUrl, 'notified-restored', yaml);
      },
    });
  }, 180_000);

  it('hookwatch backup on a PostgreSQL URL points to the Backup and restore section of docs/postgres.md', async () => {
    const out = await hookwatchBackup(['--to', join(tmp, 'copy.db')], { HOOKWATCH_DB: pg.server().url('hookwatch') });
    expect(out.status).toBe(1);
    expect(out.stderr).toBe('hookwatch: db is a PostgreSQL URL: hookwatch backup copies a SQLite store; back PostgreSQL up with pg_dump and restore it with pg_restore, as docs/postgres.md says under "Backup and restore"\n');
    expect(out.stderr).not.toContain(pg.server().password);
  });
});
