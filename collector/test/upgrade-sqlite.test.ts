/**
 * An upgrade on SQLite, as an operator runs it: hookwatch receives the real Claude Code captures, fires alerts to
 * a webhook and keeps a silence; it stops, the file is taken back to the schema a release left, and the current
 * hookwatch starts on the same file and config. From the previous release (SQLite migration 14) migration 15 adds
 * the counters' count of executions whose sizes may be sums; from the release before it (migration 13) the
 * late-arrival index of migration 14 is built too. Either way every view answers as before (the rows written before
 * count none of those executions, and their sizes read as the commands run against the executions tell), the
 * alerts and the silence are carried over, and nothing already delivered is notified again.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../src/store/sqlite/index.ts';
import { postOtlp, startTestService, tempDir, type TestService } from './helpers.ts';
import { WebhookSink } from './support/alerting.ts';
import { sqliteUndoSizesMaySum } from './support/downgrade.ts';
import { capturesNow, evaluations, silenceBash, upgradeConfigYaml, views } from './support/upgrade.ts';

/** The schema each release left: its last migration, and what the later ones add, taken back. */
const RELEASES = [
  { name: 'the previous release', schema: 14, undo: '' },
  { name: 'the release before it', schema: 13, undo: 'DROP INDEX events_late_arrival;' },
];

/** `v` without its sizesMaySumExecutions fields, at any depth. */
function withoutSizesMaySum(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutSizesMaySum);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(Object.entries(v).filter(([k]) => k !== 'sizesMaySumExecutions').map(([k, x]) => [k, withoutSizesMaySum(x)]));
}

/** The sizesMaySumExecutions values in `v`, in the order JSON lists them. */
function sizesMaySumCounts(v: unknown): number[] {
  const out: number[] = [];
  JSON.stringify(v, (k, x: unknown) => {
    if (k === 'sizesMaySumExecutions') out.push(x as number);
    return x;
  });
  return out;
}

let service: TestService | undefined;
/** Each case's webhook sink and folder. */
let opened: { sink: WebhookSink; tmp: ReturnType<typeof tempDir> } | undefined;
afterEach(async () => {
  await service?.close();
  await opened?.sink.close();
  opened?.tmp.cleanup();
  service = undefined;
  opened = undefined;
});

describe('upgrade on SQLite', () => {
  it('finds the previous release\'s schema two migrations behind (15, the count of executions whose sizes may be sums; 16, the stored findings\' commands redacted), as the upgrade notes say (README "Upgrading")', () => {
    // Another migration added since: the notes must say so (and that the previous release refuses the file after it).
    expect(RELEASES[0]!.schema).toBe(MIGRATIONS.length - 2);
  });

  it.each(RELEASES)('from $name (schema $schema): views, alerts and silences carry over, nothing is notified twice', async (release) => {
    const sink = new WebhookSink();
    const tmp = tempDir('hookwatch-upgrade-');
    opened = { sink, tmp };
    await sink.start();
    const config = join(tmp.dir, 'hookwatch.yaml');
    writeFileSync(config, upgradeConfigYaml(sink.url));
    const env = { HOOKWATCH_CONFIG: config };
    const now = Date.now();
    const range = `from=${new Date(now - 3_600_000).toISOString()}&to=${new Date(now + 3_600_000).toISOString()}`;

    const before = await startTestService(env, { dir: tmp.dir });
    // SessionStart:startup and PostToolUse:Bash persist an output each: two alerts, the second one silenced first.
    expect(await silenceBash(before.httpUrl, now)).toBe(201);
    for (const r of capturesNow(now)) expect((await postOtlp(before.otlpHttpUrl, r.path, r.body, { 'content-type': 'application/json' })).status).toBe(200);
    await sink.waitFor(1);
    // Settled before it is read: the silenced alert evaluated and the delivery recorded (as the PostgreSQL case waits).
    const evaluated = await evaluations(before.httpUrl);
    await expect.poll(() => evaluations(before.httpUrl), { timeout: 10_000 }).toBeGreaterThan(evaluated + 2);
    expect(sink.requests).toHaveLength(1);
    const seen = await views(before.httpUrl, range);
    expect((seen['alerts'] as { labels: Record<string, string> }[]).map((a) => a.labels['hook_name']).sort()).toEqual(['PostToolUse:Bash', 'SessionStart:startup']);
    await before.stop();
    const notified = sink.requests.length;

    const db = new DatabaseSync(join(tmp.dir, 'hookwatch.db'));
    if (release.undo) db.exec(release.undo);
    sqliteUndoSizesMaySum(db);
    db.prepare('DELETE FROM schema_migrations WHERE version > ?').run(release.schema);
    db.close();

    service = await startTestService(env, { dir: tmp.dir });
    const after = new DatabaseSync(join(tmp.dir, 'hookwatch.db'), { readOnly: true });
    try {
      expect(after.prepare('SELECT MAX(version) AS v FROM schema_migrations').get()).toEqual({ v: MIGRATIONS.length });
      expect(after.prepare("SELECT name FROM sqlite_master WHERE name = 'events_late_arrival'").get()).toEqual({ name: 'events_late_arrival' });
    } finally {
      after.close();
    }
    // The rows written before count no execution whose sizes may be sums (the captures have some: two commands
    // each); the raw events at a range's edges still do. Every other figure answers as before.
    const upgraded = await views(service.httpUrl, range);
    expect(withoutSizesMaySum(upgraded)).toEqual(withoutSizesMaySum(seen));
    const counted = sizesMaySumCounts(seen);
    expect(counted.some((n) => n > 0)).toBe(true);
    expect(sizesMaySumCounts(upgraded).every((n, i) => n === 0 || n === counted[i])).toBe(true);
    // Evaluations since the start (the first one covers the time hookwatch was down) notify nothing again.
    const started = await evaluations(service.httpUrl);
    await expect.poll(() => evaluations(service!.httpUrl), { timeout: 10_000 }).toBeGreaterThan(started + 2);
    expect(sink.requests.length).toBe(notified);
    expect(sink.requests.map((r) => r.headers['webhook-id'])).toEqual([...new Set(sink.requests.map((r) => r.headers['webhook-id']))]);
  });
});
