/**
 * Guard trims on every backend: stored once however often a batch is retried, answered per hook and range in
 * buckets aligned like the series, the largest trim reported with its sizes, pruned with the raw events, and
 * kept apart from Claude Code's executions (no hook counter moves).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hookId } from '../hooks/extract.ts';
import type { GuardTrim } from './guard-trims.ts';
import { PostgresStore } from './postgres/index.ts';
import { startTestServer, type TestServer } from '../../test/support/postgres/server.ts';
import { HOUR, MINUTE } from './segments.ts';
import { SqliteStore } from './sqlite/index.ts';
import type { Store } from './store.ts';

const T0 = Date.UTC(2026, 2, 2);
const HOOK = hookId('SessionStart', 'SessionStart:startup');

let n = 0;
function trim(over: Partial<GuardTrim> = {}): GuardTrim {
  n++;
  return { dedupKey: `g-${n}`, hookId: HOOK, hookEvent: 'SessionStart', hookName: 'SessionStart:startup', timeMs: T0 + 5 * MINUTE, field: 'stdout', sentChars: 15_000, keptChars: 9_500, sessionId: 's-1', ...over };
}

const backends: { name: string; open: () => Promise<Store>; setup: () => Promise<void>; teardown: () => Promise<void> }[] = [];
{
  let dir = '';
  backends.push({
    name: 'sqlite',
    setup: async () => {
      dir = mkdtempSync(join(tmpdir(), 'hookwatch-guard-store-'));
    },
    open: async () => new SqliteStore({ path: join(dir, `s${++n}.db`), synchronous: 'normal' }),
    teardown: async () => rmSync(dir, { recursive: true, force: true }),
  });
  let server: TestServer | undefined;
  backends.push({
    name: 'postgres',
    setup: async () => {
      server = await startTestServer();
    },
    open: async () => {
      if (!server) throw new Error('PostgreSQL test server did not start');
      return PostgresStore.open({ url: await server.createDatabase(), poolSize: 2 });
    },
    teardown: async () => server?.stop(),
  });
}

for (const backend of backends) {
  describe(`guard trims on ${backend.name}`, () => {
    let store: Store;
    beforeAll(async () => {
      await backend.setup();
      store = await backend.open();
    }, 60_000);
    afterAll(async () => {
      await store?.close();
      await backend.teardown();
    });

    it('stores each trim once, and answers per hook in aligned buckets with the largest trim', async () => {
      const batch = [
        trim({ timeMs: T0 + 5 * MINUTE, sentChars: 12_000, keptChars: 9_480 }),
        trim({ timeMs: T0 + 7 * MINUTE, field: 'hookSpecificOutput.additionalContext', sentChars: 15_000, keptChars: 9_496 }),
        trim({ timeMs: T0 + HOUR + MINUTE, sentChars: 11_000, keptChars: 9_400 }),
        trim({ hookId: hookId('Stop', 'Stop'), hookEvent: 'Stop', hookName: 'Stop', timeMs: T0 + 6 * MINUTE, sentChars: 99_000, keptChars: 9_000 }),
      ];
      expect(await store.recordGuardTrims(batch)).toEqual(batch);
      // A retried request: nothing new.
      expect(await store.recordGuardTrims(batch.slice(0, 2))).toEqual([]);

      const stats = await store.guardTrims(HOOK, { fromMs: T0, toMs: T0 + 2 * HOUR, stepMs: HOUR });
      expect(stats.trims).toBe(3);
      expect(stats.largest).toEqual({ field: 'hookSpecificOutput.additionalContext', sentChars: 15_000, keptChars: 9_496, timeMs: T0 + 7 * MINUTE });
      expect(stats.buckets).toEqual([
        { startMs: T0, trims: 2, maxSentChars: 15_000, maxKeptChars: 9_496 },
        { startMs: T0 + HOUR, trims: 1, maxSentChars: 11_000, maxKeptChars: 9_400 },
      ]);
      const minutes = await store.guardTrims(HOOK, { fromMs: T0 + 6 * MINUTE, toMs: T0 + HOUR, stepMs: MINUTE });
      expect(minutes.buckets).toEqual([{ startMs: T0 + 7 * MINUTE, trims: 1, maxSentChars: 15_000, maxKeptChars: 9_496 }]);
      expect(await store.guardTrims(hookId('x', 'y'), { fromMs: T0, toMs: T0 + HOUR, stepMs: HOUR })).toEqual({ trims: 0, largest: null, buckets: [] });
    });

    it('name the trims a batch stored: not those a retry resends, nor a trim repeated within the batch', async () => {
      const hook = hookId('PreToolUse', 'PreToolUse:retried');
      const first = trim({ hookId: hook, hookEvent: 'PreToolUse', hookName: 'PreToolUse:retried', timeMs: T0 + 3 * HOUR, sentChars: 20_000 });
      expect(await store.recordGuardTrims([first])).toEqual([first]);
      const fresh = trim({ hookId: hook, hookEvent: 'PreToolUse', hookName: 'PreToolUse:retried', timeMs: T0 + 3 * HOUR + MINUTE, sentChars: 30_000 });
      expect(await store.recordGuardTrims([first, fresh, { ...fresh }])).toEqual([fresh]);
      expect((await store.guardTrims(hook, { fromMs: T0 + 3 * HOUR, toMs: T0 + 4 * HOUR, stepMs: HOUR })).trims).toBe(2);
    });

    it('are not executions: no hook appears and no counter moves', async () => {
      expect((await store.hookCounters({ fromMs: T0, toMs: T0 + 2 * HOUR })).size).toBe(0);
      expect(await store.hook(HOOK)).toBeUndefined();
    });

    it('are pruned with the raw events, and counted apart from them', async () => {
      const removed = await store.prune(T0 + HOUR, T0);
      expect(removed.guardTrims).toBe(3);
      expect(removed.events).toBe(0);
      const stats = await store.guardTrims(HOOK, { fromMs: T0, toMs: T0 + 2 * HOUR, stepMs: HOUR });
      expect(stats.trims).toBe(1);
      expect(stats.buckets[0]?.startMs).toBe(T0 + HOUR);
    });
  });
}
