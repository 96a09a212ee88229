/**
 * Transcript findings carry the hook's command, which may hold a credential. `scan` redacts it before sending,
 * but the server takes findings from any sender (an older `scan`, a script): it redacts them again when it takes
 * them, and once at start in the findings an earlier version stored as sent, on both backends. No answer of the
 * API holds the secret.
 */
import { DatabaseSync } from 'node:sqlite';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { TranscriptCommandsResponse } from '../../shared/src/transcript-api.ts';
import { FINDING_ATTRIBUTES, FINDING_EVENT_NAME } from '../src/hooks/transcript-findings.ts';
import { hookId } from '../src/hooks/extract.ts';
import { MIGRATIONS as SQLITE_MIGRATIONS, SqliteStore } from '../src/store/sqlite/index.ts';
import { MIGRATIONS as PG_MIGRATIONS, PostgresStore } from '../src/store/postgres/index.ts';
import { getJson, postOtlp, startTestService, tempDir, type TestService } from './helpers.ts';
import { queryOnce, startTestServer, type TestServer } from './support/postgres/server.ts';

/** 2026-12-01T00:00:00Z. */
const NOW = Date.parse('2026-12-01T00:00:00Z');
const HOOK = { event: 'Stop', name: 'Stop:notify' };
const H = hookId(HOOK.event, HOOK.name);
const SECRET_COMMAND = 'curl -H "Authorization: token ghp_abcdefghijklmnop1234" https://hooks.slack.com/services/T0123/B0456/abcdefSECRETxyz';
const REDACTED_COMMAND = 'curl -H "Authorization: token [redacted]" https://hooks.slack.com/[redacted]';
/** What must appear in no answer. */
const SECRETS = ['ghp_abcdefghijklmnop1234', 'abcdefghijklmnop1234', 'abcdefSECRETxyz', 'services/T0123'];
/** The routes that answer with hook data (a hook known from findings alone has no telemetry route of its own). */
const ROUTES = [`/api/v1/hooks/${H}/commands?from=now-7d`, '/api/v1/hooks?from=now-7d', '/api/v1/overview?from=now-7d'];

/** A run finding of HOOK, as `scan --send` (or any sender) posts it: OTLP/HTTP JSON. */
function findingRequest(id: string, command: string, timeMs: number): string {
  const attrs: Record<string, string> = {
    'event.name': FINDING_EVENT_NAME,
    [FINDING_ATTRIBUTES.id]: id,
    [FINDING_ATTRIBUTES.kind]: 'run',
    [FINDING_ATTRIBUTES.source]: 'transcript',
    [FINDING_ATTRIBUTES.timestamp]: new Date(timeMs).toISOString(),
    [FINDING_ATTRIBUTES.session]: 'session-1',
    [FINDING_ATTRIBUTES.hookEvent]: HOOK.event,
    [FINDING_ATTRIBUTES.hookName]: HOOK.name,
    [FINDING_ATTRIBUTES.command]: command,
    [FINDING_ATTRIBUTES.runOutcome]: 'success',
  };
  return JSON.stringify({
    resourceLogs: [{
      resource: { attributes: [{ key: 'service.name', value: { stringValue: 'hookwatch-scan' } }] },
      scopeLogs: [{ logRecords: [{ timeUnixNano: String(BigInt(timeMs) * 1_000_000n), body: { stringValue: FINDING_EVENT_NAME }, attributes: Object.entries(attrs).map(([key, v]) => ({ key, value: { stringValue: v } })) }] }],
    }],
  });
}

async function commands(service: TestService): Promise<TranscriptCommandsResponse['commands']> {
  const res = await getJson<TranscriptCommandsResponse>(service.httpUrl, `/api/v1/hooks/${H}/commands?from=now-7d`);
  expect(res.status).toBe(200);
  return res.body.commands;
}

/** Every route's answer, as text: none holds a secret. */
async function expectNoSecret(service: TestService): Promise<void> {
  for (const route of ROUTES) {
    const res = await fetch(service.httpUrl + route);
    expect(res.status, route).toBe(200);
    const text = await res.text();
    for (const secret of SECRETS) expect(text, route).not.toContain(secret);
  }
}

describe('the command of a finding sent with a secret in it', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService({}, { now: () => NOW });
  });
  afterAll(async () => {
    await service.close();
  });

  it('is stored and served redacted, and the same command redacted by scan counts with it', async () => {
    const post = async (id: string, command: string): Promise<void> => {
      const res = await postOtlp(service.otlpHttpUrl, '/v1/logs', findingRequest(id, command, NOW - 3_600_000), { 'content-type': 'application/json' });
      expect(res.status).toBe(200);
      for (const secret of SECRETS) expect(res.body.toString('utf8')).not.toContain(secret);
    };
    await post('finding-raw', SECRET_COMMAND);
    expect(await commands(service)).toEqual([expect.objectContaining({ command: REDACTED_COMMAND, runs: 1 })]);
    // What `scan` sends now: already redacted, stored as sent, one command with the other.
    await post('finding-scan', REDACTED_COMMAND);
    expect(await commands(service)).toEqual([expect.objectContaining({ command: REDACTED_COMMAND, runs: 2 })]);
    await expectNoSecret(service);
  });
});

describe('findings stored with a secret by an earlier version', () => {
  let pgServer: TestServer;
  beforeAll(async () => {
    pgServer = await startTestServer();
  });
  afterAll(async () => {
    await pgServer.stop();
  });

  const STORED = [
    ['old-1', SECRET_COMMAND],
    ['old-2', SECRET_COMMAND.replace('B0456', 'B0789')],
    ['old-3', REDACTED_COMMAND],
    ['old-4', 'node notify.js plain'],
  ] as const;
  const insert = `INSERT INTO transcript_findings (finding_id, kind, hook_id, hook_event, hook_name, command, session_id, time_ms, field, outcome, chars) VALUES `;
  const expected = [
    expect.objectContaining({ command: REDACTED_COMMAND, runs: 3, sessions: 1 }),
    expect.objectContaining({ command: 'node notify.js plain', runs: 1 }),
  ];

  it('are redacted in place when SQLite opens the file', async () => {
    const tmp = tempDir();
    try {
      const path = join(tmp.dir, 'hookwatch.db');
      // A file of the current schema, the redaction step not applied yet, holding the findings as sent.
      await new SqliteStore({ path, synchronous: 'normal', dimensions: [] }).close();
      const db = new DatabaseSync(path);
      const redactionVersion = SQLITE_MIGRATIONS.length;
      db.prepare('DELETE FROM schema_migrations WHERE version = ?').run(redactionVersion);
      for (const [id, command] of STORED) db.prepare(`${insert} (?, 'run', ?, ?, ?, ?, 's', ?, 'success', '', NULL)`).run(id, H, HOOK.event, HOOK.name, command, NOW - 3_600_000);
      db.close();

      const service = await startTestService({ HOOKWATCH_DB: path }, { now: () => NOW });
      try {
        expect(await commands(service)).toEqual(expected);
        await expectNoSecret(service);
      } finally {
        await service.close();
      }
      const after = new DatabaseSync(path);
      const rows = after.prepare('SELECT command FROM transcript_findings ORDER BY finding_id').all() as { command: string }[];
      expect(rows.map((r) => r.command)).toEqual([REDACTED_COMMAND, REDACTED_COMMAND, REDACTED_COMMAND, 'node notify.js plain']);
      expect(after.prepare('SELECT MAX(version) AS v FROM schema_migrations').get()).toEqual({ v: SQLITE_MIGRATIONS.length });
      after.close();
    } finally {
      tmp.cleanup();
    }
  });

  it('are redacted in place when PostgreSQL is migrated', async () => {
    const url = await pgServer.createDatabase();
    await (await PostgresStore.open({ url, dimensions: [] })).close();
    await queryOnce(url, 'DELETE FROM schema_migrations WHERE version = $1', [PG_MIGRATIONS.length]);
    for (const [id, command] of STORED) await queryOnce(url, `${insert} ($1, 'run', $2, $3, $4, $5, 's', $6, 'success', '', NULL)`, [id, H, HOOK.event, HOOK.name, command, NOW - 3_600_000]);

    const service = await startTestService({ HOOKWATCH_DB: url }, { now: () => NOW });
    try {
      expect(await commands(service)).toEqual(expected);
      await expectNoSecret(service);
    } finally {
      await service.close();
    }
    const rows = await queryOnce<{ command: string }>(url, 'SELECT command FROM transcript_findings ORDER BY finding_id');
    expect(rows.map((r) => r.command)).toEqual([REDACTED_COMMAND, REDACTED_COMMAND, REDACTED_COMMAND, 'node notify.js plain']);
    expect(await queryOnce(url, 'SELECT MAX(version) AS v FROM schema_migrations')).toEqual([{ v: PG_MIGRATIONS.length }]);
  });
});
