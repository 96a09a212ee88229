/**
 * Lifecycles tests share, registered with vitest: a PostgreSQL server for a describe block (useTestServer), and
 * for the replica fault tests one PostgreSQL server and a temp dir per
 * file, clusters of real replicas per test, everything stopped afterwards (paused replicas resumed first).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { startTestServer, type TestServer, type TestServerOptions } from './server.ts';
import { postLogs, startCluster, startWebhookReceiver, type TestCluster, type WebhookReceiver } from './replicas.ts';
import { startReplica, type Replica } from '../serve-process.ts';

export interface ReplicaFixture {
  /** The temp dir of this file (configs, replica working dirs). */
  dir(): string;
  /** The PostgreSQL server of this file. */
  server(): TestServer;
  /** Replicas started by the test itself, stopped after the test. */
  adopt(replicas: Replica[]): void;
  /** Starts a replica on `db` in a working dir of its own, stopped after the test. */
  replica(db: string, env: Record<string, string>, startTimeoutMs?: number): Promise<Replica>;
  /** Something else to close after the test (after the replicas stop). */
  defer(close: () => Promise<void>): void;
  /** Posts an OTLP/HTTP logs body to a replica and expects it acknowledged (200). */
  post(replica: Replica, body: string): Promise<void>;
  /** Starts a cluster (stopped after the test) on a fresh database. */
  cluster(env: Record<string, string>): Promise<TestCluster>;
  /** Starts a webhook receiver (closed after the test). */
  webhook(): Promise<WebhookReceiver>;
}

/** `opts`: the server's settings (startTestServer). */
export function useReplicaFixture(opts?: TestServerOptions): ReplicaFixture {
  let server: TestServer;
  let dir = '';
  const replicas: Replica[] = [];
  const closers: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    server = await startTestServer(opts);
    dir = mkdtempSync(join(tmpdir(), 'hookwatch-replicas-'));
  });
  afterEach(async () => {
    // A replica left paused by a failed test would never exit on SIGTERM.
    for (const r of replicas) if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGCONT');
    await Promise.all(replicas.splice(0).map((r) => r.stop(3000)));
    for (const c of closers.splice(0)) await c();
  });
  afterAll(async () => {
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  return {
    dir: () => dir,
    server: () => server,
    adopt: (started) => void replicas.push(...started),
    async replica(db, env, startTimeoutMs = 90_000) {
      const r = await startReplica({ db, cwd: mkdtempSync(join(dir, 'replica-')), env, startTimeoutMs });
      replicas.push(r);
      return r;
    },
    defer: (close) => void closers.push(close),
    async post(replica, body) {
      expect(await postLogs(replica, body)).toBe(200);
    },
    async cluster(env) {
      const c = await startCluster(server, dir, env);
      replicas.push(...c.replicas);
      closers.push(() => c.db.end());
      return c;
    },
    async webhook() {
      const hook = await startWebhookReceiver();
      closers.push(() => hook.close());
      return hook;
    },
  };
}

/**
 * A throwaway server for the tests of a describe block or file (registered with vitest): started before them;
 * what a test `defer`s is closed after it, last deferred first; after them all the stores they `track` are
 * closed, then the server is stopped.
 */
export function useTestServer(opts?: TestServerOptions): { server(): TestServer; track<T extends { close(): Promise<void> }>(store: T): T; defer(...close: (() => Promise<void>)[]): void } {
  let server: TestServer | undefined;
  const open: { close(): Promise<void> }[] = [];
  const deferred: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    server = await startTestServer(opts);
  });
  afterEach(async () => {
    for (const close of deferred.splice(0).reverse()) await close();
  });
  afterAll(async () => {
    await Promise.all(open.map((s) => s.close().catch(() => undefined)));
    await server?.stop();
  });
  return {
    server: () => {
      if (!server) throw new Error('the test server starts before the tests');
      return server;
    },
    track: (store) => {
      open.push(store);
      return store;
    },
    defer: (...close) => void deferred.push(...close),
  };
}
