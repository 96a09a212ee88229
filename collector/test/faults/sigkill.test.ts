/**
 * SIGKILL during load, then restart: everything a client got 200 for is in the store, whole (a batch is one
 * transaction), and the restarted process serves again. The server is the real CLI in a child process, killed
 * with no chance to flush; the check reads the SQLite file itself after a clean second shutdown.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { HOOK_EVENT_SHARE, batchTemplate, stamp } from '../../../bench/lib/batch.ts';
import { agentFor, post } from '../../../bench/lib/harness.ts';
import { exited, startCli } from '../cli.ts';
import { tempDir } from '../helpers.ts';
const RECORDS = 32;
const CLIENTS = 16;

const children: ChildProcess[] = [];
const cleanups: (() => void)[] = [];

afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const f of cleanups.splice(0)) f();
});

describe('SIGKILL during load', () => {
  // Generous bounds: two process starts on a busy 2-core runner can take tens of seconds.
  it('keeps every acknowledged batch, whole, and serves again after restart', { timeout: 150_000 }, async () => {
    const { dir, cleanup } = tempDir('hookwatch-kill-');
    cleanups.push(cleanup);
    const template = batchTemplate(RECORDS, 'protobuf');
    const headers = { 'content-type': template.contentType };

    const first = await startCli(join(dir, 'hookwatch.db'), dir, children);
    const agent = agentFor(CLIENTS);
    const acked: string[] = [];
    let killed = false;
    const clients = Array.from({ length: CLIENTS }, async () => {
      while (!killed) {
        const session = randomUUID();
        try {
          const res = await post(agent, `${first.otlp}/v1/logs`, stamp(template, session), headers);
          // Only a complete 200 counts as acknowledged; a reset mid-answer is not.
          if (res.status === 200) acked.push(session);
        } catch {
          // The server died under this request: not acknowledged, and the client would retry it.
        }
      }
    });
    const t0 = performance.now();
    while (performance.now() - t0 < 1500 || acked.length < 20) {
      if (performance.now() - t0 > 45_000) throw new Error(`only ${acked.length} batches acknowledged in 45 s`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    first.child.kill('SIGKILL');
    await exited(first.child);
    killed = true;
    await Promise.all(clients);
    agent.destroy();
    expect(first.child.signalCode).toBe('SIGKILL');

    // Restart on the same file: it recovers the WAL and takes new data.
    const second = await startCli(join(dir, 'hookwatch.db'), dir, children);
    const after = randomUUID();
    const again = agentFor(1);
    expect((await post(again, `${second.otlp}/v1/logs`, stamp(template, after), headers)).status).toBe(200);
    again.destroy();
    second.child.kill('SIGTERM');
    await exited(second.child);

    const db = new DatabaseSync(join(dir, 'hookwatch.db'), { readOnly: true });
    try {
      expect((db.prepare('PRAGMA integrity_check').get() as { integrity_check: string }).integrity_check).toBe('ok');
      const counts = new Map<string, number>();
      for (const r of db.prepare('SELECT a.session_id AS s, COUNT(*) AS n FROM events JOIN attr_sets a ON a.id = events.attrs GROUP BY a.session_id').all() as { s: string; n: number }[]) counts.set(r.s, Number(r.n));
      const perBatch = RECORDS * HOOK_EVENT_SHARE;
      const missing = acked.filter((s) => counts.get(s) !== perBatch);
      expect(missing, `${missing.length} of ${acked.length} acknowledged batches missing or partial`).toEqual([]);
      // No batch is ever half-stored, acknowledged or not.
      for (const [session, n] of counts) expect(n, `batch ${session}`).toBe(perBatch);
      expect(counts.get(after)).toBe(perBatch);
    } finally {
      db.close();
    }
  });
});
