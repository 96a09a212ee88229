/**
 * Real hookwatch replicas for tests and benchmarks: `node collector/src/main.ts serve` child processes
 * (serve-process.ts) sharing one database, plus a small load-balancing proxy that can drop responses to force
 * client retries.
 */
import { createHash } from 'node:crypto';
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { startReplica, waitFor, type Replica } from '../serve-process.ts';

/** What the proxy did to one request body (keyed by its SHA-1: a retry sends the same bytes). */
export interface BodyFate {
  /** Replica base URLs the body was sent to, in order. */
  sentTo: string[];
  /** Upstream statuses, in order. */
  statuses: number[];
  /** How the client's first attempt ended: passed, dropped (connection cut after the upstream answered) or refused (503). */
  first: 'passed' | 'dropped' | 'refused';
}

export interface DroppingProxy {
  url: string;
  bodies: Map<string, BodyFate>;
  stats: { requests: number; dropped: number; refused: number };
  close(): Promise<void>;
}

/**
 * A round-robin proxy in front of the replicas. The first attempt of every `dropEvery`-th distinct body is
 * forwarded and then "lost": either the connection is cut after the replica answered (the data is stored but
 * the client never hears so) or a 503 is returned. Retries of that body pass, so no batch is lost for good.
 */
export async function startDroppingProxy(targets: () => string[], opts: { dropEvery?: number } = {}): Promise<DroppingProxy> {
  const dropEvery = opts.dropEvery ?? 3;
  const bodies = new Map<string, BodyFate>();
  const stats = { requests: 0, dropped: 0, refused: 0 };
  let rr = 0;
  let distinct = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      stats.requests++;
      const body = Buffer.concat(chunks);
      const key = createHash('sha1').update(body).digest('hex');
      let fate = bodies.get(key);
      const firstAttempt = !fate;
      let lose: BodyFate['first'] = 'passed';
      if (!fate) {
        distinct++;
        if (distinct % dropEvery === 0) lose = (distinct / dropEvery) % 2 ? 'dropped' : 'refused';
        fate = { sentTo: [], statuses: [], first: lose };
        bodies.set(key, fate);
      }
      const list = targets();
      const target = list[rr++ % list.length] as string;
      fate.sentTo.push(target);
      const headers: IncomingHttpHeaders = { ...req.headers };
      // Hop-by-hop headers stay here: the body is re-sent whole, with its own length.
      for (const h of ['host', 'connection', 'keep-alive', 'transfer-encoding']) delete headers[h];
      headers['content-length'] = String(body.length);
      const up = request(new URL(req.url ?? '/', target), { method: req.method, headers }, (upRes) => {
        const parts: Buffer[] = [];
        upRes.on('data', (c: Buffer) => parts.push(c));
        upRes.on('end', () => {
          const status = upRes.statusCode ?? 502;
          fate.statuses.push(status);
          if (firstAttempt && lose === 'dropped') {
            stats.dropped++;
            req.socket.destroy();
            return;
          }
          if (firstAttempt && lose === 'refused') {
            stats.refused++;
            res.writeHead(503, { 'retry-after': '0', 'content-type': 'text/plain' }).end('dropped by the test proxy');
            return;
          }
          res.writeHead(status, { 'content-type': upRes.headers['content-type'] ?? 'application/octet-stream' }).end(Buffer.concat(parts));
        });
      });
      up.on('error', () => {
        fate.statuses.push(0);
        if (!res.headersSent) res.writeHead(502).end();
      });
      up.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    bodies,
    stats,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** One webhook request as the receiver saw it. */
export interface WebhookDelivery {
  webhookId: string;
  status: string;
  labels: Record<string, string>;
  at: number;
  /** The HTTP status the receiver answered. */
  answered: number;
  /** The body's externalURL: each replica's own HTTP address unless http.externalUrl is set, so it names the sender. */
  externalUrl: string;
}

export interface WebhookReceiver {
  url: string;
  deliveries: WebhookDelivery[];
  /** The status to answer from now on (200 by default). */
  answer(status: number): void;
  close(): Promise<void>;
}

/** A webhook endpoint on loopback that records every request (webhook-id, alert status and labels). */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const deliveries: WebhookDelivery[] = [];
  let status = 200;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { status?: string; externalURL?: string; alerts?: { labels?: Record<string, string> }[] };
      deliveries.push({ webhookId: String(req.headers['webhook-id']), status: String(body.status), labels: body.alerts?.[0]?.labels ?? {}, at: Date.now(), answered: status, externalUrl: String(body.externalURL) });
      res.writeHead(status, status === 503 ? { 'retry-after': '0' } : {}).end(status === 200 ? 'ok' : 'unavailable');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/alerts`,
    deliveries,
    answer: (s) => {
      status = s;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** An OTLP/JSON logs body with one hook_execution_complete whose output was persisted (stdout over the cap). */
export function persistedOutputBody(t: number, session: string, hookName = 'PostToolUse:Bash'): string {
  return JSON.stringify({
    resourceLogs: [{
      resource: { attributes: [{ key: 'service.name', value: { stringValue: 'claude-code' } }, { key: 'service.version', value: { stringValue: '2.1.332' } }] },
      scopeLogs: [{
        scope: { name: 'com.anthropic.claude_code.events' },
        logRecords: [{
          timeUnixNano: `${t}000000`,
          body: { stringValue: 'claude_code.hook_execution_complete' },
          attributes: Object.entries({
            'event.name': 'hook_execution_complete', 'event.timestamp': new Date(t).toISOString(), 'event.sequence': '1', 'session.id': session,
            hook_event: hookName.split(':')[0] as string, hook_name: hookName, num_hooks: '1', num_success: '1', stdout_chars: '24000', num_outputs_persisted: '1',
          }).map(([key, v]) => ({ key, value: { stringValue: v } })),
        }],
      }],
    }],
  });
}

/** Writes an alerting config (one persisted rule, one webhook receiver) into dir and returns its path. */
export function writeAlertingConfig(dir: string, webhookUrl: string, opts: { forMs?: number } = {}): string {
  const path = join(dir, `alerting-${Date.now()}-${Math.random().toString(36).slice(2, 8)}.yaml`);
  writeFileSync(path, [
    'alerting:',
    '  rules:',
    '    - kind: persisted',
    '      name: persisted_output',
    `      for: ${opts.forMs ?? 0}ms`,
    '  receivers:',
    '    - name: team-hook',
    '      type: webhook',
    `      url: ${webhookUrl}`,
    '',
  ].join('\n'));
  return path;
}

/** The pid in a replica's name in the lease row and the heartbeats (host:pid:random). */
const replicaPid = (name: string): number => Number(name.split(':').at(-2));

/** The pid of the replica holding an unexpired lease, read from the lease row. */
export async function leaseHolderPid(client: pg.Client): Promise<number | undefined> {
  const r = await client.query<{ holder: string }>("SELECT holder FROM leader_lease WHERE name = 'hookwatch' AND expires_at > now()");
  const h = r.rows[0]?.holder;
  return h ? replicaPid(h) : undefined;
}

/** How long ago each replica tried the lease, by pid, in ms: its heartbeat is written with every renewal attempt. */
export async function renewalAgesMs(client: pg.Client): Promise<Map<number, number>> {
  const r = await client.query<{ replica: string; age_ms: number }>("SELECT replica, EXTRACT(EPOCH FROM now() - last_seen)::float8 * 1000 AS age_ms FROM replica_heartbeats WHERE name = 'hookwatch'");
  return new Map(r.rows.map((row) => [replicaPid(row.replica), row.age_ms]));
}

/** Waits until `r` holds the lease, read through `client`. */
export function leading(client: pg.Client, r: Replica, timeoutMs = 20_000): Promise<true> {
  return waitFor(`replica ${r.pid} leading`, async () => ((await leaseHolderPid(client)) === r.pid ? true : undefined), timeoutMs);
}

/** Waits until a replica other than `r` (the leader until then) holds the lease, read through `client`; its pid. */
export function takenOver(client: pg.Client, r: Replica, timeoutMs: number, everyMs: number): Promise<number> {
  return waitFor(`another replica than ${r.pid} to take the lease`, async () => {
    const pid = await leaseHolderPid(client);
    return pid !== undefined && pid !== r.pid ? pid : undefined;
  }, timeoutMs, everyMs);
}

export interface TestCluster {
  replicas: Replica[];
  /** A connection to the replicas' database, for reading the lease and the outbox. */
  db: pg.Client;
  leader: Replica;
  followers: Replica[];
}

/** Starts n replicas on a fresh database of server and waits for one of them to hold the lease. */
export async function startCluster(server: { createDatabase(): Promise<string> }, dir: string, env: Record<string, string>, n = 3): Promise<TestCluster> {
  const url = await server.createDatabase();
  // Generous start timeout: three Node processes starting at once on a busy 2-core CI machine take a while.
  const replicas = await Promise.all(Array.from({ length: n }, () => startReplica({ db: url, cwd: mkdtempSync(join(dir, 'replica-')), env, startTimeoutMs: 90_000 })));
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  const pid = await waitFor('a leader', () => leaseHolderPid(db), 15_000);
  const leader = replicas.find((r) => r.pid === pid);
  if (!leader) throw new Error(`lease held by unknown pid ${pid}`);
  return { replicas, db, leader, followers: replicas.filter((r) => r !== leader) };
}

/** POSTs an OTLP/JSON logs body to a replica; resolves to the HTTP status. */
export async function postLogs(r: Replica, body: string): Promise<number> {
  const res = await fetch(`${r.otlpHttpUrl}/v1/logs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  await res.arrayBuffer();
  return res.status;
}
