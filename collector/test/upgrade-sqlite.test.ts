/**
 * An upgrade on SQLite, as an operator runs it: hookwatch receives the real Claude Code captures, fires alerts to
 * a webhook and keeps a silence; it stops, the file is taken back to the schema a release left, and the current
 * hookwatch starts on the same file and config. From the previous release (SQLite migration 14) there is nothing
 * to migrate; from the release before it (migration 13: the late-arrival index of migration 14 did not exist)
 * the migration runs. Either way every view answers as before, the alerts and the silence are carried over, and
 * nothing already delivered is notified again.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../src/store/sqlite/index.ts';
import { fixtureRequests, getJson, postOtlp, startTestService, tempDir, type TestService } from './helpers.ts';
import { WebhookSink } from './support/alerting.ts';

/** The schema each release left: its last migration, and what the later ones add, taken back. */
const RELEASES = [
  { name: 'the previous release', schema: 14, undo: '' },
  { name: 'the release before it', schema: 13, undo: 'DROP INDEX events_late_arrival;' },
];

/** The JSON captures (run1, run5) with their times moved to `nowMs`, as if Claude Code had just sent them. */
function capturesNow(nowMs: number): { path: string; body: string }[] {
  return ['run1-httpjson', 'run5-mockapi-tools-httpjson'].flatMap((run) => {
    const requests = fixtureRequests(run);
    const first = BigInt(/"timeUnixNano":"(\d+)"/.exec(requests[0]!.body.toString())![1]!);
    const shift = BigInt(nowMs) * 1_000_000n - first;
    return requests.map((r) => ({
      path: r.path,
      body: r.body.toString()
        .replace(/"(timeUnixNano|observedTimeUnixNano|startTimeUnixNano)":"(\d+)"/g, (_, k: string, v: string) => `"${k}":"${BigInt(v) + shift}"`)
        .replace(/"event\.timestamp","value":\{"stringValue":"([^"]+)"/g, (_, v: string) => `"event.timestamp","value":{"stringValue":"${new Date(Date.parse(v) + Number(shift / 1_000_000n)).toISOString()}"`),
    }));
  });
}

/** Every view over a fixed range, as the dashboard and scripts read them. */
async function views(base: string, range: string): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  const read = async (name: string, path: string): Promise<unknown> => {
    const { status, body } = await getJson(base, path);
    expect(status, path).toBe(200);
    out[name] = body;
    return body;
  };
  const { hooks } = (await read('hooks', `/api/v1/hooks?${range}`)) as { hooks: { id: string; hookName: string }[] };
  for (const h of hooks) {
    await read(`series ${h.hookName}`, `/api/v1/hooks/${h.id}/series?${range}&step=1h`);
    for (const d of ['service.version', 'session.id', 'terminal.type']) await read(`breakdown ${h.hookName} ${d}`, `/api/v1/hooks/${h.id}/breakdown?dimension=${d}&${range}`);
  }
  await read('filtered', `/api/v1/hooks?${range}&service.version=2.1.332&terminal.type=xterm`);
  const overview = (await read('overview', `/api/v1/overview?${range}`)) as { otlpHttpPort?: unknown };
  delete overview.otlpHttpPort;
  await read('fleet', `/api/v1/fleet/series?${range}&step=1h`);
  await read('silences', '/api/v1/silences');
  const { alerts } = (await getJson<{ alerts: Record<string, unknown>[] }>(base, '/api/v1/alerts')).body;
  out['alerts'] = alerts.map((a) => ({ id: a['id'], state: a['state'], labels: a['labels'], startsAt: a['startsAt'], lastNotifiedAt: a['lastNotifiedAt'], silencedBy: a['silencedBy'] }));
  return out;
}

async function evaluations(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  return Number(/^hookwatch_alert_evaluations_total (\d+)/m.exec(text)?.[1] ?? NaN);
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
  it('finds the previous release\'s schema unchanged, as the upgrade notes say (README "Upgrading")', () => {
    // A migration added since: the notes must say so (and that the previous release refuses the file after it).
    expect(RELEASES[0]!.schema).toBe(MIGRATIONS.length);
  });

  it.each(RELEASES)('from $name (schema $schema): views, alerts and silences carry over, nothing is notified twice', async (release) => {
    const sink = new WebhookSink();
    const tmp = tempDir('hookwatch-upgrade-');
    opened = { sink, tmp };
    await sink.start();
    const config = join(tmp.dir, 'hookwatch.yaml');
    writeFileSync(config, `alerting:
  evaluationInterval: 100ms
  rules:
    - { kind: persisted, window: 1h }
  receivers:
    - { name: oncall, type: webhook, url: ${sink.url}/hooks, signingSecret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw }
`);
    const env = { HOOKWATCH_CONFIG: config };
    const now = Date.now();
    const range = `from=${new Date(now - 3_600_000).toISOString()}&to=${new Date(now + 3_600_000).toISOString()}`;

    const before = await startTestService(env, { dir: tmp.dir });
    for (const r of capturesNow(now)) expect((await postOtlp(before.otlpHttpUrl, r.path, r.body, { 'content-type': 'application/json' })).status).toBe(200);
    // SessionStart:startup and PostToolUse:Bash persisted an output each: two alerts, the second one silenced.
    const silence = await fetch(`${before.httpUrl}/api/v1/silences`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ matchers: [{ name: 'hook_name', value: 'PostToolUse:Bash' }], endsAt: new Date(now + 86_400_000).toISOString(), createdBy: 'ops', comment: 'known' }),
    });
    expect(silence.status).toBe(201);
    await sink.waitFor(1);
    const seen = await views(before.httpUrl, range);
    expect((seen['alerts'] as unknown[]).length).toBeGreaterThan(0);
    await before.stop();
    const notified = sink.requests.length;

    const db = new DatabaseSync(join(tmp.dir, 'hookwatch.db'));
    if (release.undo) db.exec(release.undo);
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
    expect(await views(service.httpUrl, range)).toEqual(seen);
    // Evaluations since the start (the first one covers the time hookwatch was down) notify nothing again.
    const started = await evaluations(service.httpUrl);
    await expect.poll(() => evaluations(service!.httpUrl), { timeout: 10_000 }).toBeGreaterThan(started + 2);
    expect(sink.requests.length).toBe(notified);
    expect(sink.requests.map((r) => r.headers['webhook-id'])).toEqual([...new Set(sink.requests.map((r) => r.headers['webhook-id']))]);
  });
});
