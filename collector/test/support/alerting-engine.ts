/**
 * What the tests of the alerting engine's evaluations build it on: a folder for its state files, a real SQLite store
 * (a file in that folder, or ':memory:' so it answers in the test's thread), a real webhook receiver `ops`, the
 * settings of every rule under test, a thousand stored hooks, and the firing notifications its outbox saved.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AlertingConfig } from '../../src/config/index.ts';
import type { HookEvent } from '../../src/hooks/model.ts';
import { parseReceivers } from '../../src/notify/settings.ts';
import { SqliteStore } from '../../src/store/sqlite/index.ts';
import { parseRules } from '../../src/alerting/settings.ts';
import { hookEvent, WebhookSink } from './alerting.ts';

/**
 * A fresh folder named from `prefix`, a store (`hooks.db` in it when `store` is 'file'), and a started receiver
 * (on the clock `now` when given); `close` ends them and removes the folder.
 */
export async function engineFakes(prefix: string, store: 'file' | ':memory:', now?: () => number): Promise<{ dir: string; store: SqliteStore; sink: WebhookSink; close(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const sqlite = new SqliteStore({ path: store === 'file' ? join(dir, 'hooks.db') : ':memory:' });
  const sink = new WebhookSink(now);
  await sink.start();
  const close = async (): Promise<void> => {
    await sqlite.close();
    await sink.close();
    rmSync(dir, { recursive: true, force: true });
  };
  return { dir, store: sqlite, sink, close };
}

/** Alerting with `rules` (as hookwatch.yaml gives them) and the receiver `ops` at `sinkUrl`, its queue `maxQueue` long. */
export function engineConfig(sinkUrl: string, rules: unknown[], maxQueue: number): AlertingConfig {
  return {
    rules: parseRules(rules),
    externalLabels: {},
    receivers: parseReceivers([{ name: 'ops', url: `${sinkUrl}/hook` }]),
    evaluationIntervalMs: 10_000,
    repeatIntervalMs: 4 * 3_600_000,
    externalUrl: 'http://hookwatch.test',
    otlp: { endpoint: '', headers: {} },
    delivery: { deadlineMs: 60_000, initialBackoffMs: 5, maxBackoffMs: 20, maxQueue },
  };
}

/** `count` hooks with an execution each at `timeMs`: one in ten with a persisted output over the cap, one in ten near it. */
export function manyHooks(count: number, timeMs: number): HookEvent[] {
  return Array.from({ length: count }, (_, i) => hookEvent({
    hookName: `PostToolUse:hook-${i}`, timeMs, additionalContextChars: i % 10 === 3 ? 12_000 : i % 10 === 7 ? 9_000 : 100, outputsPersisted: i % 10 === 3 ? 1 : 0,
  }));
}

/** The labels of the alerts the outbox saved in the state file `db` holds a firing notification of. */
export function outboxFiring(db: string): Record<string, string>[] {
  const sql = new DatabaseSync(db, { readOnly: true });
  try {
    return (sql.prepare('SELECT data FROM alert_notifications').all() as { data: string }[])
      .map((r) => JSON.parse(r.data) as { status: string; alert: { labels: Record<string, string> } })
      .filter((n) => n.status === 'firing').map((n) => n.alert.labels);
  } finally {
    sql.close();
  }
}
