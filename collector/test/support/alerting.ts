/**
 * Test support for alerting and notify: a real webhook receiver on port 0 (plain HTTP, or HTTPS with mutual TLS)
 * that records every request and answers as told, a controllable clock, hook events built from a few facts, and OTLP/JSON bodies with them.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { hookId } from '../../src/hooks/extract.ts';
import type { HookEvent } from '../../src/hooks/model.ts';
import type { AlertRecord } from '../../src/alerting/model.ts';
import { classifyExecution } from '../../src/hooks/cliff.ts';
import type { AlertmanagerWebhookBody } from '../../src/notify/alertmanager.ts';
import type { Store } from '../../src/store/store.ts';
import type { AlertSummary, HookSummary } from '../../../shared/src/api.ts';
import { alertRange } from '../../../shared/src/alert-range.ts';
import { serveApi } from './api-server.ts';

/** One request the sink received. */
export interface ReceivedRequest {
  /** Clock time when it arrived (the test's clock, fake or real). */
  at: number;
  /** Real time (performance.now) when it arrived. */
  perfMs: number;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The status the sink answered. */
  status: number;
  /** Over mutual TLS: the common name of the client certificate presented. */
  peer?: string;
}

/**
 * A sink that speaks TLS: its certificate and key, and for mutual TLS the CA files client certificates must be
 * signed by (a client without one is refused in the handshake).
 */
export interface SinkTls {
  certFile: string;
  keyFile: string;
  clientCaFiles?: string[];
  /** The newest TLS version the sink speaks (default: Node's, TLS 1.3). */
  maxVersion?: 'TLSv1.2';
}

/** How the sink answers one request: a status, optional headers and body, optional delay before answering. */
export interface SinkReply {
  status: number;
  headers?: Record<string, string>;
  /** The answer's body; `ok` (2xx) or `no` otherwise when absent. */
  body?: string;
  delayMs?: number;
  /**
   * Takes the request (records and answers it) only once this settles, as a receiver that applies a request
   * after one that reached it later (Alertmanager handles concurrent requests in no set order).
   */
  hold?: Promise<void>;
}

/**
 * How an OTLP/HTTP receiver takes a request: an empty Export*ServiceResponse in the request's encoding (JSON `{}`,
 * or a protobuf one, which is no bytes), so an OpenTelemetry exporter reads an answer it understands.
 */
export function otlpAccepted(req: { headers: IncomingHttpHeaders }): SinkReply {
  return String(req.headers['content-type'] ?? '').includes('protobuf')
    ? { status: 200, headers: { 'content-type': 'application/x-protobuf' }, body: '' }
    : { status: 200, headers: { 'content-type': 'application/json' }, body: '{}' };
}

/** A real HTTP (or HTTPS) receiver on 127.0.0.1 port 0. `reply` decides each answer (default 200). */
export class WebhookSink {
  readonly requests: ReceivedRequest[] = [];
  reply: (req: { path: string; headers: IncomingHttpHeaders; body: string; index: number }) => SinkReply = () => ({ status: 200 });
  private readonly server: Server;
  private readonly clock: () => number;
  private readonly scheme: 'http' | 'https';
  private waiters: { n: number; resolve: () => void }[] = [];
  private readonly sockets = new Set<Socket>();
  url = '';

  constructor(clock: () => number = Date.now, tls?: SinkTls) {
    this.clock = clock;
    this.scheme = tls ? 'https' : 'http';
    const mutual = tls?.clientCaFiles?.length ? { ca: tls.clientCaFiles.map((f) => readFileSync(f)), requestCert: true, rejectUnauthorized: true } : {};
    const handler: Parameters<typeof createServer>[1] = (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const index = this.requests.length;
        const r = this.reply({ path: req.url ?? '', headers: req.headers, body, index });
        const peer = tls ? (req.socket as TLSSocket).getPeerCertificate().subject?.CN : undefined;
        const take = (): void => {
          this.requests.push({ at: this.clock(), perfMs: performance.now(), path: req.url ?? '', headers: req.headers, body, status: r.status, ...(peer ? { peer: String(peer) } : {}) });
          const answer = (): void => {
            res.writeHead(r.status, { 'content-type': 'text/plain', ...r.headers });
            res.end(r.body ?? (r.status < 300 ? 'ok' : 'no'));
          };
          if (r.delayMs) setTimeout(answer, r.delayMs).unref();
          else answer();
          this.wake();
        };
        if (r.hold) void r.hold.then(take);
        else take();
      });
    };
    this.server = tls ? createHttpsServer({ cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile), ...mutual, ...(tls.maxVersion ? { maxVersion: tls.maxVersion } : {}) }, handler) : createServer(handler);
    this.server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
  }

  /**
   * Keeps an idle connection open for `ms` and tells clients so (`Keep-Alive: timeout=...`), instead of Node's 5 s:
   * a connection still open after its client stopped is then the client's doing.
   */
  keepConnectionsFor(ms: number): void {
    this.server.keepAliveTimeout = ms;
  }

  /** Connections open now, idle ones included. */
  openConnections(): number {
    return this.sockets.size;
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `${this.scheme}://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this.url;
  }

  /** Requests answered 2xx. */
  delivered(): ReceivedRequest[] {
    return this.requests.filter((r) => r.status >= 200 && r.status < 300);
  }

  /** Parsed JSON bodies of the delivered requests. */
  bodies<T = Record<string, unknown>>(): T[] {
    return this.delivered().map((r) => JSON.parse(r.body) as T);
  }

  private wake(): void {
    this.waiters = this.waiters.filter((w) => {
      if (this.requests.length >= w.n) {
        w.resolve();
        return false;
      }
      return true;
    });
  }

  /** Resolves once `n` requests have arrived, or rejects after `timeoutMs`. */
  waitFor(n: number, timeoutMs = 5000): Promise<void> {
    if (this.requests.length >= n) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`expected ${n} requests, got ${this.requests.length}`)), timeoutMs);
      this.waiters.push({ n, resolve: () => { clearTimeout(t); resolve(); } });
    });
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** A clock the test moves. */
export class FakeClock {
  t: number;
  constructor(start: number) {
    this.t = start;
  }
  now = (): number => this.t;
  advance(ms: number): number {
    this.t += ms;
    return this.t;
  }
}

let seq = 0;

/** Facts of one hook event; everything else gets a plain default. */
export interface EventFacts {
  kind?: 'complete' | 'start';
  hookEvent?: string;
  hookName?: string;
  timeMs: number;
  numHooks?: number;
  success?: number;
  /** Size attributes; null for a client older than 2.1.280 (no sizes). */
  additionalContextChars?: number | null;
  stdoutChars?: number | null;
  outputsPersisted?: number | null;
  serviceVersion?: string;
  team?: string;
  /** When hookwatch received it (a late arrival: long after timeMs); unset, the event has no receive time. */
  receivedMs?: number;
}

/** A hook event as the extractor would make it. */
export function hookEvent(f: EventFacts): HookEvent {
  const kind = f.kind ?? 'complete';
  const hookEventName = f.hookEvent ?? (f.hookName ?? 'SessionStart').split(':')[0] ?? 'SessionStart';
  const hookName = f.hookName ?? 'SessionStart:startup';
  const complete = kind === 'complete';
  const sizes = complete && f.additionalContextChars !== null && f.outputsPersisted !== null;
  const facts = {
    numHooks: f.numHooks ?? 1,
    stdoutChars: sizes ? (f.stdoutChars ?? (f.additionalContextChars ?? 100) + 60) : null,
    additionalContextChars: sizes ? (f.additionalContextChars ?? 100) : null,
    systemMessageChars: sizes ? 0 : null,
    initialUserMessageChars: sizes ? 0 : null,
    outputsPersisted: sizes ? (f.outputsPersisted ?? 0) : null,
  };
  return {
    kind,
    dedupKey: `test-${process.pid}-${++seq}`,
    hookId: hookId(hookEventName, hookName),
    hookEvent: hookEventName,
    hookName,
    timeMs: f.timeMs,
    numSuccess: complete ? (f.success ?? facts.numHooks) : null,
    numBlocking: complete ? 0 : null,
    numNonBlockingError: complete ? 0 : null,
    numCancelled: complete ? 0 : null,
    durationMs: complete ? 20 : null,
    ...facts,
    sizesKnown: sizes,
    status: complete ? classifyExecution(facts, 8000) : 'unknown',
    serviceName: 'claude-code',
    serviceVersion: f.serviceVersion ?? '2.1.332',
    sessionId: 'session-1',
    userId: 'user-1',
    userEmail: '',
    userAccountUuid: '',
    organizationId: 'org-1',
    terminalType: 'test',
    source: 'otlp',
    extra: f.team ? { team: f.team } : {},
    ...(f.receivedMs === undefined ? {} : { receivedMs: f.receivedMs }),
  };
}

/** An OTLP/JSON logs body with hook_execution_complete records, values as stringValue like Claude Code 2.1.332. */
/** OTLP/JSON hook_execution_complete records; outputsPersisted null leaves num_outputs_persisted out (a client older than 2.1.280). */
export function otlpHookBody(records: { hookName: string; timeMs: number; outputsPersisted: number | null; additionalContextChars: number; sessionId?: string; sequence?: number; timestamp?: string }[]): string {
  const s = (v: string | number): { stringValue: string } => ({ stringValue: String(v) });
  return JSON.stringify({
    resourceLogs: [{
      resource: { attributes: [{ key: 'service.name', value: s('claude-code') }, { key: 'service.version', value: s('2.1.332') }] },
      scopeLogs: [{
        scope: { name: 'com.anthropic.claude_code.events', version: '2.1.332' },
        logRecords: records.map((r, i) => ({
          timeUnixNano: String(BigInt(r.timeMs) * 1_000_000n),
          body: s('claude_code.hook_execution_complete'),
          attributes: Object.entries({
            'event.name': 'hook_execution_complete',
            'event.timestamp': r.timestamp ?? new Date(r.timeMs).toISOString(),
            'event.sequence': r.sequence ?? i,
            'session.id': r.sessionId ?? `s-${r.timeMs}-${i}`,
            hook_event: r.hookName.split(':')[0] ?? r.hookName,
            hook_name: r.hookName,
            num_hooks: 1,
            num_success: 1,
            num_blocking: 0,
            num_non_blocking_error: 0,
            num_cancelled: 0,
            total_duration_ms: 12,
            stdout_chars: r.additionalContextChars + 60,
            additional_context_chars: r.additionalContextChars,
            system_message_chars: 0,
            initial_user_message_chars: 0,
            ...(r.outputsPersisted === null ? {} : { num_outputs_persisted: r.outputsPersisted }),
          }).map(([key, v]) => ({ key, value: s(v) })),
        })),
      }],
    }],
  });
}

/** An alert record with plain defaults (unit tests of the alerting modules). */
export function alertRecord(over: Partial<AlertRecord> & { id: string }): AlertRecord {
  const state = over.state ?? 'firing';
  return {
    fingerprint: `fp-${over.id}`, rule: 'persisted', state, labels: { alertname: over.rule ?? 'persisted' }, annotations: {}, hookId: null,
    activeAtMs: 1000, startsAtMs: state === 'pending' ? null : 2000, endsAtMs: state === 'resolved' ? 3000 : null, lastActiveMs: 2000,
    lastNotifiedMs: null, notifiedFiring: false, notifySeq: 0,
    ...over,
  };
}

/** What the keepFiringFor restart timeline drives: an alerting harness on one store, restartable. */
export interface RestartableAlerting {
  clock: FakeClock;
  readonly alerting: { stop(): Promise<void> };
  push(facts: Omit<EventFacts, 'timeMs'>): Promise<void>;
  /** Steps the clock by the evaluation interval up to `ms`, evaluating at each step. */
  run(ms: number): Promise<void>;
  restart(): Promise<void>;
}

/**
 * keepFiringFor across a restart, as every alert state store must keep it: a persisted output over the cap (the
 * condition holds for the 2 m window, is found absent at about 3 m, and the alert keeps firing 5 m more), with the
 * process down for 15 s at each restart time from 2 to 4 minutes, every `every` ms, against the same timeline
 * without a restart. The last time the condition held is saved at most once a minute, so a restart must not cut
 * keepFiringFor short; the evaluations after it fall 15 s later (up to one tick more), and a restart before the
 * condition was found absent may keep the alert for the downtime too. Returns the unbroken resolve time and, per
 * restart time, whether the alert resolved earlier than that or later than allowed.
 */
export async function keepFiringAcrossRestarts<H extends RestartableAlerting>(
  start: (rules: unknown) => Promise<H>,
  resolvedAt: (h: H) => number | undefined,
  opts: { tick: number; every: number },
): Promise<{ unbrokenMs: number; restarts: { at: number; early: boolean; late: boolean }[] }> {
  const MIN = 60_000;
  const DOWN = 15_000;
  const rules = [{ kind: 'persisted', window: '2m', keepFiringFor: '5m' }];
  const over = { hookName: 'SessionStart:startup', additionalContextChars: 12_000, outputsPersisted: 1 };
  const timeline = async (restartAt: number | undefined): Promise<number> => {
    const h = await start(rules);
    await h.push(over);
    if (restartAt !== undefined) {
      await h.run(restartAt);
      // Down for 15 s: no evaluation sees whether the condition still held meanwhile.
      await h.alerting.stop();
      h.clock.advance(DOWN);
      await h.restart();
    }
    await h.run(20 * MIN - (restartAt === undefined ? 0 : restartAt + DOWN));
    return resolvedAt(h) ?? NaN;
  };
  const unbrokenMs = await timeline(undefined);
  const restarts: { at: number; early: boolean; late: boolean }[] = [];
  for (let at = 2 * MIN; at <= 4 * MIN; at += opts.every) {
    const resolved = await timeline(at);
    const latest = unbrokenMs + opts.tick + (at < 3 * MIN ? DOWN : 0);
    restarts.push({ at, early: resolved < unbrokenMs, late: resolved > latest });
  }
  return { unbrokenMs, restarts };
}

/** What the long-window link timeline drives: an alerting harness over a store (with the `team` dimension). */
export interface LinkedAlerting {
  clock: FakeClock;
  sink: WebhookSink;
  store: Store;
  readonly alerting: { stop(): Promise<void>; engine: { alerts(): AlertSummary[] } };
  /** Stores the events and evaluates the rules they trigger, as the receiver does. */
  pushAt(facts: EventFacts[]): Promise<void>;
  /** Steps the clock by the evaluation interval up to `ms`, evaluating at each step. */
  run(ms: number): Promise<void>;
  restart(): Promise<void>;
  /** A configuration reload with these rules. */
  reconfigure(rules: unknown): Promise<void>;
}

/** How a rule comes to find outputs already hours old in its window. */
export const LONG_WINDOW_CASES = ['a reload adds the rule', 'hookwatch starts with the rule', 'a reload adds a rule by team'] as const;

/**
 * A `persisted` rule with a 24-hour window meets outputs persisted 20 and 19 hours before (received then, so not
 * late): added by a configuration reload, or there when hookwatch starts with them already stored. Returns the
 * first notification's alert, its link's range, the hook's figures its page reads over that range (GET
 * /api/v1/hooks/:id), and the alert as the alerts API lists it.
 */
export async function linksOverLongWindow<H extends LinkedAlerting>(start: (rules: unknown) => Promise<H>, how: (typeof LONG_WINDOW_CASES)[number]): Promise<{
  stamped: number;
  alert: AlertmanagerWebhookBody['alerts'][number] | undefined;
  link: { from: number; to: number };
  page: HookSummary;
  listed: AlertSummary | undefined;
  listedFrom: number;
}> {
  const HOUR = 3_600_000;
  const rule = { kind: 'persisted', window: '24h', ...(how === 'a reload adds a rule by team' ? { groupBy: 'team' } : {}) };
  const startsWithRule = how === 'hookwatch starts with the rule';
  const h = await start(startsWithRule ? [rule] : []);
  const stamped = h.clock.now() - 20 * HOUR + 7 * 60_000;
  const outputs: EventFacts[] = [0, HOUR].map((d) => ({ hookName: 'SessionStart:startup', additionalContextChars: 12_000, outputsPersisted: 1, team: 'platform', timeMs: stamped + d, receivedMs: stamped + d }));
  if (startsWithRule) {
    // Stored while hookwatch was down (by another replica, or before an upgrade): no ingest evaluation saw them.
    await h.alerting.stop();
    await h.store.ingest(outputs.map(hookEvent));
    await h.restart();
  } else {
    await h.pushAt(outputs);
    if (h.sink.requests.length > 0) throw new Error('notified with no rule configured');
    await h.reconfigure([rule]);
  }
  await h.run(10_000);
  const alert = h.sink.bodies<AlertmanagerWebhookBody>()[0]?.alerts[0];
  const url = new URL(alert?.generatorURL ?? 'http://unset/');
  const link = { from: Date.parse(url.searchParams.get('from') ?? ''), to: Date.parse(url.searchParams.get('to') ?? '') };
  const api = await serveApi(h.store, h.clock.now());
  let page: HookSummary;
  try {
    const res = await fetch(`${api.base}/api/v1${url.pathname}?${new URLSearchParams({ from: url.searchParams.get('from') ?? '', to: url.searchParams.get('to') ?? '' }).toString()}`);
    if (res.status !== 200) throw new Error(`GET ${url.pathname}: ${res.status} ${await res.text()}`);
    page = ((await res.json()) as { hook: HookSummary }).hook;
  } finally {
    await api.close();
  }
  const listed = h.alerting.engine.alerts()[0];
  return { stamped, alert, link, page, listed, listedFrom: listed ? Date.parse(alertRange(listed, h.clock.now()).from) : NaN };
}
