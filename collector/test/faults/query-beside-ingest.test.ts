/**
 * A dashboard query never holds up ingest: a real hookwatch on SQLite holding a month of an organisation's
 * events answers a query that reads every raw event of the month (the fleet chart at a 30-minute step, under a
 * filter no rollup keeps: a step under an hour is read from the raw events, so it takes a while) while Claude
 * Code exports, sent through the real OpenTelemetry exporter after the query began, are committed and
 * acknowledged before the query is answered. With the queries on the event loop the exports waited for the
 * query to end. Only the order is asserted, never a duration.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { FleetSeriesResponse } from '../../../shared/src/api.ts';
import { SqliteStore } from '../../src/store/sqlite/index.ts';
import { loadHistory } from '../support/history.ts';
import { emitExecutions, startServiceUnderTest, type ServiceUnderTest } from '../support/service.ts';

const DAY = 86_400_000;
const dir = mkdtempSync(join(tmpdir(), 'hookwatch-beside-'));
let service: ServiceUnderTest | undefined;
afterAll(async () => {
  await service?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('queries beside ingest (SQLite)', () => {
  it('OTLP exports sent while a 30-day query over the raw events runs are acknowledged before it is answered, and the next query sees them', { timeout: 90_000 }, async () => {
    const db = join(dir, 'org.db');
    const now = Date.now();
    const history = new SqliteStore({ path: db, synchronous: 'normal', dimensions: ['team'] });
    await loadHistory(history, { events: 300_000, fromMs: now - 29 * DAY, toMs: now - DAY });
    await history.close();
    service = await startServiceUnderTest({ HOOKWATCH_DB: db, HOOKWATCH_DIMENSIONS: 'team' });
    const api = service.httpUrl;

    const order: string[] = [];
    const query = fetch(`${api}/api/v1/fleet/series?from=now-30d&to=now&step=30m&terminal.type=vscode`).then(async (res) => {
      expect(res.status).toBe(200);
      const body = (await res.json()) as FleetSeriesResponse;
      order.push('query');
      return body;
    });
    // Give the server the query first; then export, one batch after the other, until the query is answered.
    await new Promise((resolve) => setTimeout(resolve, 30));
    let exports = 0;
    let done = false;
    void query.finally(() => {
      done = true;
    });
    while (!done && exports < 50) {
      await emitExecutions(service.otlpHttpUrl, [{ hookEvent: 'PostToolUse', hookName: 'PostToolUse:beside', stdoutChars: 120 }]);
      exports++;
      if (!done) order.push('export');
    }
    const answered = await query;
    expect(answered.hooks.reduce((n, h) => n + h.executions.reduce((a, b) => a + b, 0), 0)).toBeGreaterThan(0);
    // At least one export was committed and acknowledged while the query was still being computed.
    expect(order[0]).toBe('export');
    expect(order).toContain('query');

    // Read-your-writes: every acknowledged export is in the next answer.
    const hooks = (await (await fetch(`${api}/api/v1/hooks?from=now-1h`)).json()) as { hooks: { hookName: string; executions: number }[] };
    expect(hooks.hooks.find((h) => h.hookName === 'PostToolUse:beside')?.executions).toBe(exports);
  });
});
