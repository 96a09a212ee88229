/**
 * The bound on the API's pending store reads, against PostgreSQL with its one read connection stuck behind
 * another session's lock: queries past http.maxPendingQueries are answered 503 with Retry-After while the reads
 * already asked wait, and those complete once the lock goes.
 */
import { describe, expect, it } from 'vitest';
import { serveApi } from '../../test/support/api-server.ts';
import { stuckRead } from '../../test/support/postgres/stuck-read.ts';
import { useTestServer } from '../../test/support/postgres/fixture.ts';
import { MetricsRegistry } from '../telemetry/metrics.ts';
import { QueryGate, registerQueryMetrics } from './query-gate.ts';

const pg = useTestServer();

const LIMIT = 3;
const EXTRA = 5;

describe('API query bound', () => {
  it('answers 503 with Retry-After past http.maxPendingQueries while the readers are busy, and the queries let in complete once they are free', { timeout: 60_000 }, async () => {
    const stuck = await stuckRead(pg.server(), 40, 20);
    const gate = new QueryGate(LIMIT);
    const metrics = new MetricsRegistry();
    registerQueryMetrics(metrics, gate);
    const api = await serveApi(stuck.store, stuck.now, gate);
    try {
      const range = `from=${new Date(stuck.now - 86_400_000).toISOString()}&to=${new Date(stuck.now).toISOString()}`;
      // Up to the bound, one at a time: each waits for the read connection the stuck read holds.
      const first: Promise<Response>[] = [];
      for (let i = 1; i <= LIMIT; i++) {
        first.push(fetch(`${api.base}/api/v1/hooks?${range}`));
        for (let n = 0; n < 400 && gate.pending < i; n++) await new Promise((r) => setTimeout(r, 25));
        expect(gate.pending).toBe(i);
      }
      // Past it, every kind of query is refused at once, before the store is asked (the lock is still held).
      const paths = ['/api/v1/hooks', '/api/v1/overview', `/api/v1/hooks/${stuck.hookId}/series`, `/api/v1/hooks/${stuck.hookId}/breakdown`, '/api/v1/fleet/series'];
      const refused = await Promise.all(paths.slice(0, EXTRA).map((p) => fetch(`${api.base}${p}?${range}`)));
      for (const res of refused) {
        expect(res.status).toBe(503);
        expect(res.headers.get('retry-after')).toBe('5');
        const body = (await res.json()) as { error: { code: string; message: string } };
        expect(body.error.code).toBe('unavailable');
        expect(body.error.message).toMatch(/too many queries at once \(http\.maxPendingQueries: 3/);
      }
      expect(gate.pending).toBe(LIMIT);
      // Routes that read no hook data still answer.
      expect((await fetch(`${api.base}/api/v1/dimensions`)).status).toBe(200);
      // A request no query route answers is told so, as below the bound: 405 with Allow, or 404; never "try again".
      const post = await fetch(`${api.base}/api/v1/hooks?${range}`, { method: 'POST' });
      expect(post.status).toBe(405);
      expect(post.headers.get('allow')).toBe('GET, HEAD');
      expect(((await post.json()) as { error: { code: string } }).error.code).toBe('method_not_allowed');
      const deleted = await fetch(`${api.base}/api/v1/hooks/${stuck.hookId}/series`, { method: 'DELETE' });
      expect(deleted.status).toBe(405);
      await deleted.body?.cancel();
      const unknown = await fetch(`${api.base}/api/v1/hooks/${stuck.hookId}/series/more`);
      expect(unknown.status).toBe(404);
      expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('not_found');
      const text = await metrics.render();
      expect(text).toMatch(/^hookwatch_api_queries_refused_total 5$/m);
      expect(text).toMatch(/^hookwatch_api_queries_pending 3$/m);
      expect(text).toMatch(/^hookwatch_api_queries_pending_capacity 3$/m);

      await stuck.locker.query('COMMIT');
      for (const res of await Promise.all(first)) expect(res.status).toBe(200);
      await stuck.read;
      expect(gate.pending).toBe(0);
      // Below the bound again: queries are answered.
      expect((await fetch(`${api.base}/api/v1/overview?${range}`)).status).toBe(200);
    } finally {
      await api.close();
      await stuck.close();
    }
  });
});
