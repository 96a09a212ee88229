/**
 * Builds and runs the pipeline from a typed config:
 *
 *   OTLP/HTTP receiver --+                       (both before the 200)
 *   OTLP/gRPC receiver --+-> logs -------------> hook ingest -> store (SQLite or PostgreSQL)
 *     one in-flight      |                         then, with forward.endpoint set: forward queue
 *     byte budget        +-> metrics, traces ---> forward queue (without forward.endpoint: discarded)
 *   forward queue (durable, on disk) -> forwarder -> downstream OTLP endpoint (retries, dead letters)
 *   hook ingest, per committed batch -> alert engine -> notify dispatcher -> webhook, Slack, Alertmanager
 *                                       (and alert events as OTLP logs to alerting.otlp.endpoint)
 *   store, alert engine, forwarding, /metrics -> Express on http.addr: API, dashboard
 *
 * Replicas on one PostgreSQL elect one leader (coordination) for alert evaluation, notifications and retention.
 * The ports listen before the store opens (a PostgreSQL server that comes up after hookwatch is waited for,
 * store/open.ts): meanwhile /healthz answers, /readyz and the API 503, OTLP requests 503 / UNAVAILABLE with
 * Retry-After (pipeline/opening.ts). Start returns once the store is open and everything serves, or fails having
 * closed what it opened (the ports, the store's and the forwarding queue's locks let go); stop is safe twice and
 * closes the store last. On a database server, each step of the stop that waits on it is bounded
 * (databaseStepTimeoutMs): one that does not answer costs a few seconds, not shutdown.timeout, and the stop
 * reports what it left undone. The flush of alert events to
 * alerting.otlp.endpoint gets a bound of its own on any store (alertEventFlushTimeoutMs).
 */
import { createServer, type RequestListener, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { answerClientErrors, answerOptions, apiErrorHandler, conditionalRequests, createApiRouter, getOnly, parseQuery, probeOnly, unavailable } from './api/index.ts';
import { DASHBOARD_HANDLER, RequestMetrics } from './api/request-metrics.ts';
import { closeServer, trackConnections } from './net/close-server.ts';
import { closeAfterUnreadBodies } from './net/unread-body.ts';
import { handshakeTimeout, slowClientLimits } from './net/slow-clients.ts';
import { HOST_CHECKED_BY_PORT } from './net/server-refusals.ts';
import { listenFor } from './net/listen-error.ts';
import { allowKnownHosts, browserHardening, hardeningHeaders, rejectCrossSiteWrites } from './api/same-origin.ts';
import { requireHttpAuth } from './api/auth.ts';
import type { HookwatchConfig } from './config/index.ts';
import { openFor } from './config/setting.ts';
import { reachableHost, reachableUrl, splitAddr } from './net/addr.ts';
import { TlsCredentials } from './net/tls.ts';
import { HandshakeFailures, registerHandshakeMetrics } from './net/handshake-failures.ts';
import { answerPlainHttp } from './net/plain-http-on-tls.ts';
import { discardPassThrough, type PassThroughConsumer } from './pipeline/consumer.ts';
import { HookIngest } from './pipeline/hook-ingest.ts';
import { OpeningIntake } from './pipeline/opening.ts';
import { OtlpRefusals } from './receiver/refusals.ts';
import { OtlpHttpReceiver } from './receiver/otlp-http/index.ts';
import { OtlpGrpcReceiver } from './receiver/otlp-grpc/index.ts';
import type { HoldBackoff } from './receiver/otlp-grpc/store-hold.ts';
import { startForwarding, type Forwarding } from './forward/index.ts';
import { createForwardingRouter } from './api/forward.ts';
import { createGuardTrimsRouter } from './api/guard-trims.ts';
import { QueryGate, registerQueryMetrics } from './api/query-gate.ts';
import { startAlerting, type Alerting, type AlertingOptions } from './alerting/index.ts';
import { ALERT_EVENT_EXPORT_TIMEOUT_MS, openAlertEventTls } from './notify/otlp.ts';
import { openReceiverTls } from './notify/transport.ts';
import { createAlertsRouter } from './api/alerts.ts';
import { createClusterRouter, registerClusterMetrics } from './api/cluster.ts';
import { registerAlertingMetrics } from './alerting/metrics.ts';
import { registerForwardMetrics } from './forward/metrics.ts';
import { registerAlertEventMetrics, registerNotifyMetrics } from './notify/metrics.ts';
import { HookMetrics } from './pipeline/hook-metrics.ts';
import { registerIngestMetrics } from './pipeline/metrics.ts';
import { registerReceiverMetrics } from './receiver/metrics.ts';
import { instrumentStore, registerStoreSizeMetrics } from './store/metrics.ts';
import { Retention, registerRetentionMetrics } from './store/retention.ts';
import { openStoreWhenReachable, startCoordination, StoreWait, type Coordination } from './store/open.ts';
import { isPostgresUrl } from './store/settings.ts';
import { fullLockProblem, unopenedStoreFile, unopenedStoreFileProblem } from './store/sqlite/file-owner.ts';
import { lockSqliteStore } from './store/sqlite/process-lock.ts';
import type { Store } from './store/store.ts';
import type { Logger } from './telemetry/logger.ts';
import { MetricsRegistry } from './telemetry/metrics.ts';
import { registerProcessMetrics } from './telemetry/process-metrics.ts';
import { ShutdownSteps, type ShutdownStep } from './shutdown.ts';
import { HOOKWATCH_VERSION } from './version.ts';
import { InflightBudget } from './receiver/inflight.ts';
import { openPrivacy } from './privacy/index.ts';
import { createDashboardRouter, isDashboardFile } from '../../dashboard/server.ts';
import { ConfigReloader, type ConfigSource, type ReloadResult } from './config-reload.ts';
import { createReloadRouter } from './api/reload.ts';
import type { LinkContext } from './notify/model.ts';

export interface ServiceOptions {
  logger: Logger;
  now?: () => number;
  /** Replaces the store named by config.db (tests). */
  store?: Store;
  /** Replaces how long an OTLP/gRPC export held waits before its tries when nothing wakes it (tests). */
  grpcHoldBackoff?: HoldBackoff;
  passThrough?: PassThroughConsumer;
  /** Alerting test hooks: no timer (drive evaluation on a controlled clock), a fixed jitter source, an event sink. */
  alerting?: Pick<AlertingOptions, 'timer' | 'random' | 'events'>;
  /** How often a PostgreSQL store's size is read for /metrics (default once a minute); tests shorten it. */
  storeSizeRefreshMs?: number;
  /** Where `config` was loaded from, read again by a reload (SIGHUP, POST /-/reload); absent: reload answers it cannot. */
  configSource?: ConfigSource;
  /**
   * The start's wait for a PostgreSQL server not up yet, which a stop asked for meanwhile gives up (serve's
   * SIGTERM): the start closes what it opened (the ports) and rejects with StoreWaitGivenUpError.
   */
  storeWait?: StoreWait;
}

export interface RunningService {
  config: HookwatchConfig;
  store: Store;
  ingest: HookIngest;
  receiver: OtlpHttpReceiver;
  grpcReceiver: OtlpGrpcReceiver;
  /** Port of the OTLP/gRPC receiver and its address for clients, e.g. http://127.0.0.1:4317 (https:// with otlp.tls) */
  otlpGrpcPort: number;
  otlpGrpcUrl: string;
  /** Undefined in fan-out mode (no forward.endpoint). */
  forwarding: Forwarding | undefined;
  /** GET /metrics; each stage registers its own metrics here. */
  metrics: MetricsRegistry;
  otlpHttpAddress: AddressInfo;
  httpAddress: AddressInfo;
  /** Base URLs, e.g. http://127.0.0.1:4318 (https:// where TLS is on) */
  otlpHttpUrl: string;
  httpUrl: string;
  /**
   * The dashboard's URL as people open it, which notifications link under: alerting.externalUrl, else
   * http://<host>:<port> of the HTTP port (the machine's name for a wildcard address).
   */
  externalUrl: string;
  /** Rules, lifecycle and notifications. */
  alerting: Alerting;
  /** Which replica runs alert evaluation and retention (always this one on SQLite). */
  coordination: Coordination;
  /** Retention, run every hour and on becoming leader; run() runs it now (what a run did is in /metrics). */
  retention: Retention;
  /**
   * Reads the configuration again and applies what can change while running (config-reload.ts); rejects with
   * ConfigError, the running configuration kept, when it is invalid.
   */
  reload(): Promise<ReloadResult>;
  /**
   * Stops intake, stops leading and hands leadership back (on replicas before the drain), drains and closes the
   * store; safe twice.
   */
  stop(): Promise<StopReport>;
  /**
   * How far the stop has got (nothing before stop()): the steps in progress, in the order they began, and those
   * already left unfinished. Names only, for the line of a stop that runs past shutdown.timeout.
   */
  shutdownProgress(): { pending: string[]; unfinished: string[] };
}

/** How a stop went. */
export interface StopReport {
  /**
   * Steps that timed out, failed, or could not do their job (the leader lease not handed back): empty when the
   * stop was clean. What they waited on was cut off; nothing acknowledged depends on them.
   */
  unfinished: string[];
}

/**
 * The bound of each step of a stop that waits on a database server (batches and API requests waiting on a
 * statement, the alert evaluation, deliveries and retention in progress, the hand-back of the leader lease and the
 * removal of the replica's heartbeat, closing the connections): one lease renewal period (postgres.leaseTtl / 3,
 * what the lease allows itself to connect), and at most a tenth of shutdown.timeout, so that those steps timing
 * out one after another still leave half of it.
 */
function databaseStepTimeoutMs(config: Pick<HookwatchConfig, 'postgres' | 'shutdown'>): number {
  return Math.max(100, Math.round(Math.min(config.postgres.leaseTtlMs / 3, config.shutdown.timeoutMs / 10)));
}

/** Beyond the export's own timeout, the time for the flush to hand its export over and read the answer. */
const ALERT_EVENT_FLUSH_MARGIN_MS = 1000;

/**
 * The bound of the flush of alert events to alerting.otlp.endpoint at stop, whatever the store: one export as the
 * exporter allows it (ALERT_EVENT_EXPORT_TIMEOUT_MS, retries included) and a second more, so an endpoint slow but
 * within that timeout is not cut off; at most a quarter of shutdown.timeout, so the steps after it still fit (the
 * database steps take at most half of it). 6 s by default; an endpoint that never answers costs no more.
 */
function alertEventFlushTimeoutMs(config: Pick<HookwatchConfig, 'shutdown'>): number {
  return Math.round(Math.min(ALERT_EVENT_EXPORT_TIMEOUT_MS + ALERT_EVENT_FLUSH_MARGIN_MS, config.shutdown.timeoutMs / 4));
}

const RETENTION_INTERVAL_MS = 3_600_000;
/** How often a store on a database server is asked its size for /metrics (hookwatch_store_size_bytes). */
const STORE_SIZE_REFRESH_MS = 60_000;
/** How far back a hook was seen for its /metrics series to exist from start-up (hook-metrics.ts seed). */
const HOOK_SERIES_SEED_MS = 30 * 86_400_000;

/**
 * Most hooks a follower's guard signal names one by one (16 characters each): past it, it names every hook, and
 * stays far below the NOTIFY payload limit.
 */
const MAX_SIGNALLED_GUARD_HOOKS = 200;

/**
 * What a follower's ingest signal announces: the names of the rules a batch may have made true (an array, as
 * before guard trims were signalled), or the hooks it stored guard trims of (`{"guardTrims": [ids] | "all"}`).
 * Anything malformed announces nothing.
 */
function ingestSignal(payload: string): { rules: string[]; guardHooks: string[] | 'all' } {
  const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
  try {
    const v: unknown = JSON.parse(payload);
    if (Array.isArray(v)) return { rules: strings(v), guardHooks: [] };
    const g = typeof v === 'object' && v !== null ? (v as { guardTrims?: unknown }).guardTrims : undefined;
    return { rules: [], guardHooks: g === 'all' ? 'all' : strings(g) };
  } catch {
    return { rules: [], guardHooks: [] };
  }
}

function url(a: AddressInfo, tls: boolean): string {
  const host = a.family === 'IPv6' ? `[${a.address}]` : a.address;
  return `${tls ? 'https' : 'http'}://${host === '0.0.0.0' ? '127.0.0.1' : host === '[::]' ? '[::1]' : host}:${a.port}`;
}

/**
 * What every answer of the HTTP port goes through first, the opening app's too: not cached, not sniffed, not
 * framed; a name rebound to 127.0.0.1 by another site gets nothing; nothing but /healthz without credentials.
 */
function guardFront(app: express.Express, config: HookwatchConfig): void {
  // Every answer, refusals included (the dashboard sets its own CSP).
  app.use(browserHardening({ hstsMaxAgeSeconds: config.http.hstsMaxAgeSeconds }));
  // Before anything answers. The host notifications link to is always answered (the default's: the machine's name
  // on a wildcard address).
  app.use(allowKnownHosts({ addr: config.http.addr, allowedHosts: config.http.allowedHosts, externalUrl: config.alerting.externalUrl || `http://${reachableHost(config.http.addr)}` }));
  // First, so nothing but /healthz answers without credentials when http.auth.mode is set.
  app.use(requireHttpAuth(config.http.auth));
}

/** GET /metrics, and 405 for another method. */
function serveMetrics(app: express.Express, metrics: MetricsRegistry): void {
  app.route('/metrics').get(metrics.handler()).all(getOnly('/metrics', 'the Prometheus exposition'));
}

/** What the HTTP port's routes are built with before the store opens. */
interface RouteContext {
  config: HookwatchConfig;
  metrics: MetricsRegistry;
  requestMetrics: RequestMetrics;
  queries: QueryGate;
  logger: Logger;
  now: () => number;
  otlpTls: TlsCredentials | undefined;
  /** The OTLP requests both receivers refused lately (the overview's otlpRefusals). */
  refusals: OtlpRefusals;
}

/** What the serving app's routes answer from: the store and what is built on it. */
interface OpenParts {
  store: Store;
  alerting: Pick<Alerting, 'engine' | 'dispatcher' | 'labelNames'>;
  coordination: Coordination;
  forwarding: Forwarding | undefined;
  privacy: Awaited<ReturnType<typeof openPrivacy>>;
  reload: () => Promise<ReloadResult>;
  /** The OTLP/HTTP port once every port serves (the dashboard's setup snippet). */
  otlpHttpPort: () => number | undefined;
  ready: () => boolean;
}

/**
 * The serving app's routes, after its front (guardFront, OPTIONS, conditional requests), in the order they are
 * tried, and the last handler; then each route named for hookwatch_http_requests_total.
 */
function mountRoutes(app: express.Express, ctx: RouteContext, parts: OpenParts): void {
  const { config, metrics, requestMetrics, queries, logger, now, otlpTls, refusals } = ctx;
  const { store, alerting, coordination, forwarding, privacy } = parts;
  serveMetrics(app, metrics);
  app.use(['/api', '/-/reload'], rejectCrossSiteWrites({ externalUrl: config.alerting.externalUrl }));
  app.use(createReloadRouter({ reload: parts.reload }));
  app.use(createAlertsRouter({ alerts: alerting.engine.readModel, silences: alerting.engine.silences, dispatcher: alerting.dispatcher, alertLabels: () => alerting.labelNames(), now, onSilencesChanged: () => coordination.publish('hookwatch_silences') }));
  app.use(createClusterRouter({ coordination, logger }));
  // Before the API router, whose /api catch-all answers 404.
  app.use(createForwardingRouter({ forwarding }));
  app.use(createGuardTrimsRouter({ store, now, queries }));
  const otlpHttp = { otlpHttpPort: parts.otlpHttpPort, otlpHttpTls: otlpTls !== undefined };
  app.use(createApiRouter({ store, queries, dimensions: config.dimensions, logger, now, ready: parts.ready, ...(forwarding ? { forwardQueueReady: () => forwarding.stage.ping() } : {}), privacy, ...otlpHttp, otlpIngestToken: config.otlp.ingestToken !== '', otlpClientCertificate: otlpTls?.mutual === true, otlpRefusals: refusals }));
  const dashboard = createDashboardRouter({ ...otlpHttp, servedFile: (res) => requestMetrics.answeredBy(res, DASHBOARD_HANDLER) });
  app.use(dashboard);
  // Last: an error a router passes on gets the API's JSON answer (503 while the store is down), not an HTML page.
  app.use(apiErrorHandler(logger));
  requestMetrics.nameRoutes(app, { [DASHBOARD_HANDLER]: dashboard });
}

/**
 * What the store opens, for routes built before it is (mountRoutes in openingApp, never served): every property
 * is such a stand-in in turn, and calling one throws. The routers only keep what they are given until a request
 * comes.
 */
function notOpenYet<T>(): T {
  const standIn: object = new Proxy(() => {}, {
    get: () => standIn,
    apply: () => {
      throw new Error('the store is not open');
    },
  });
  return standIn as T;
}

/**
 * The HTTP port while the store opens: alive (/healthz, for a liveness probe not to restart a process that waits
 * for its database), not ready (/readyz, with why), /metrics (what is registered so far), and 503 with
 * Retry-After for everything else, as the API answers while the store cannot serve. Counted and timed as the
 * app's requests are, under the route the serving app has for their path (its routes are built on stand-ins,
 * never served, and named: each route's series is there from the start), a file of the dashboard's under it as
 * well; the probes and /metrics answer another
 * method and OPTIONS as the app does.
 */
function openingApp(ctx: RouteContext, reason: () => string): express.Express {
  const app = closeAfterUnreadBodies(express());
  app.disable('x-powered-by');
  app.use(ctx.requestMetrics.measure());
  guardFront(app, ctx.config);
  app.use(answerOptions());
  app.route('/healthz').get((_req, res) => void res.json({ status: 'ok' })).all(probeOnly('/healthz'));
  app.route('/readyz').get((_req, res) => void res.status(503).json({ status: 'not ready', reason: reason() })).all(probeOnly('/readyz'));
  serveMetrics(app, ctx.metrics);
  app.use((req, res) => {
    // A file of the dashboard's (no route names its path) counts under the dashboard, as once it serves.
    const file = req.method === 'GET' || req.method === 'HEAD' ? isDashboardFile(req.path) : Promise.resolve(false);
    void file.then((found) => {
      if (found) ctx.requestMetrics.answeredBy(res, DASHBOARD_HANDLER);
      unavailable(res, 'hookwatch is opening its store; retry later');
    });
  });
  const notOpen = { store: notOpenYet<Store>(), alerting: notOpenYet<OpenParts['alerting']>(), coordination: notOpenYet<Coordination>(), privacy: notOpenYet<OpenParts['privacy']>() };
  mountRoutes(express(), ctx, { ...notOpen, forwarding: undefined, reload: notOpenYet(), otlpHttpPort: () => undefined, ready: () => false });
  return app;
}

export async function startService(config: HookwatchConfig, opts: ServiceOptions): Promise<RunningService> {
  // What the start has opened, closed again (the last first) when a later step fails: the store's lock and the
  // forwarding queue's are let go, so a start retried in this process (an embedding, a test) takes them.
  const opened: (() => unknown)[] = [];
  try {
    return await start(config, opts, opened);
  } catch (err) {
    for (const close of opened.reverse()) {
      try {
        await close();
      } catch (closeErr) {
        opts.logger.warn('cannot close what a failed start opened', { err: closeErr });
      }
    }
    throw err;
  }
}

async function start(config: HookwatchConfig, opts: ServiceOptions, opened: (() => unknown)[]): Promise<RunningService> {
  const { logger } = opts;
  const now = opts.now ?? Date.now;
  // Before anything is opened: a certificate or key that cannot be used stops the start, naming its setting.
  const otlpTls = config.otlp.tls ? TlsCredentials.open(config.otlp.tls, logger) : undefined;
  const httpTls = config.http.tls ? TlsCredentials.open(config.http.tls, logger) : undefined;
  const receiverTls = openReceiverTls(config.alerting.receivers, logger, opts.now);
  const eventTls = openAlertEventTls(config.alerting.otlp, logger, opts.now);
  const metrics = new MetricsRegistry({ logger });
  registerProcessMetrics(metrics, { version: HOOKWATCH_VERSION, now });
  // A SQLite store is served by one process: a second one would be leader too (every alert notified twice).
  // A file of the store this user may not open (left to root by `sudo hookwatch serve`) is named, with what to do.
  const storeLock = opts.store || isPostgresUrl(config.db) ? undefined : openFor('db', config.db, () => lockSqliteStore(config.db), (err) => {
    const unopened = unopenedStoreFile(config.db, err);
    return unopened ? unopenedStoreFileProblem(config.db, unopened.file, unopened.err) : fullLockProblem(config.db, err, "the store's lock", 'db');
  });
  opened.push(() => storeLock?.release());
  // One budget for both ports: a flood split across them must not get twice the memory.
  const inflight = new InflightBudget(config.otlp.maxInflightBytes);
  // Failed TLS handshakes on the three ports: no request is ever read from them, so no other counter sees them.
  const handshakes = new HandshakeFailures({ logger, now });
  // The start's wait for its database: a request refused meanwhile brings the next attempt forward.
  const storeWait = opts.storeWait ?? new StoreWait();
  const intake = new OpeningIntake(() => storeWait.hurry());
  // Links in notifications (webhook externalURL and generatorURL, Slack, Alertmanager's generatorURL) and on the
  // OTLP/HTTP port's page for a browser: to alerting.externalUrl, else to the HTTP port where a person opens the
  // dashboard, as Alertmanager defaults its own to its listen address. A port chosen at bind time (:0) is known once bound: no link is given before.
  let externalUrl = config.alerting.externalUrl || reachableUrl(config.http.addr, { tls: httpTls !== undefined });
  // Both receivers' refusals, logged and kept for the overview: an exporter drops a refused batch without a word.
  const refusals = new OtlpRefusals({ logger, now });
  const receiverOptions = {
    maxRequestBytes: config.otlp.maxRequestBytes,
    requestTimeoutMs: config.otlp.requestTimeoutMs,
    ingestToken: config.otlp.ingestToken,
    allowedHosts: config.http.allowedHosts,
    ...(otlpTls ? { tls: otlpTls, handshakes } : {}),
    inflight,
    // Refused (503 / UNAVAILABLE with Retry-After) until the store is open and the stages after them are built.
    logs: intake.logs,
    passThrough: intake.passThrough,
    logger,
    refusals,
  };
  // The OTLP/HTTP port once bound (before the gRPC one), named to an OTLP/HTTP exporter sent to the gRPC port.
  const grpcReceiver = new OtlpGrpcReceiver({ addr: config.otlpGrpc.addr, maxPending: config.otlp.maxPendingRequests, otlpHttpPort: () => receiver.boundPort, ...receiverOptions }, opts.grpcHoldBackoff);
  const receiver = new OtlpHttpReceiver({ addr: config.otlp.http.addr, keepAliveTimeoutMs: config.otlp.http.keepAliveTimeoutMs, dashboardUrl: () => externalUrl, ...receiverOptions });
  registerHandshakeMetrics(metrics, handshakes);
  registerReceiverMetrics(metrics, [{ transport: 'http', stats: receiver.stats }, { transport: 'grpc', stats: grpcReceiver.stats }]);

  // Counted and timed from the first request on, the opening app's and its refusals by the parser included.
  const requestMetrics = new RequestMetrics(metrics);
  // A client sending its request slowly is cut off at http.requestTimeout, as on the OTLP/HTTP port.
  const httpLimits = { ...slowClientLimits(config.http.requestTimeoutMs), ...HOST_CHECKED_BY_PORT };
  let http: Server;
  if (httpTls) {
    const httpHandshakeMs = handshakeTimeout(config.http.requestTimeoutMs);
    const server = createHttpsServer({ ...httpLimits, ...httpTls.serverOptions(), handshakeTimeout: httpHandshakeMs });
    // An http:// URL for this port gets 400 saying to use https://, not a reset connection.
    answerPlainHttp(server, { section: 'http.tls', handshakeTimeoutMs: httpHandshakeMs, headers: hardeningHeaders(), onPlain: (socket) => handshakes.plainHttp('http', socket), onFailed: (socket, error) => handshakes.failedBeforeHandshake('http', socket, error) });
    // A rotated certificate serves the connections made from now on.
    httpTls.onChange((context) => server.setSecureContext(context));
    handshakes.watch('http', server);
    http = trackConnections(server);
  } else {
    http = trackConnections(createServer(httpLimits));
  }
  // Idle kept-alive connections outlive a load balancer's (http.keepAliveTimeout), which then closes them first.
  http.keepAliveTimeout = config.http.keepAliveTimeoutMs;
  // One bound for every query route: a burst of expensive queries gets 503s, not a queue every later request waits in.
  const queries = new QueryGate(config.http.maxPendingQueries);
  registerQueryMetrics(metrics, queries);
  const routeContext: RouteContext = { config, metrics, requestMetrics, queries, logger, now, otlpTls, refusals };
  // The opening app until the store is open and everything serves, then the app; /readyz says why it waits.
  let openingReason = 'the store is opening';
  let serving: RequestListener = openingApp(routeContext, () => openingReason);
  // Served with a JSON reason for a request the HTTP parser refuses (a URL over the header limit, one not sent in
  // time) or Node's server would (CONNECT, an Expect it cannot meet, HTTP/1.1 without Host).
  answerClientErrors(http, (req, res) => serving(req, res), hardeningHeaders({ hstsMaxAgeSeconds: config.http.hstsMaxAgeSeconds }), (status) => requestMetrics.refused(status));

  opened.push(async () => {
    await receiver.shutdown();
    await grpcReceiver.shutdown();
    if (http.listening) await closeServer(http);
  });
  // Each failure to bind names the setting that chose the address (main prints it with its variable).
  const otlpHttpAddress = await listenFor('otlp.http.addr', config.otlp.http.addr, () => receiver.start());
  const otlpGrpcPort = (await listenFor('otlp.grpc.addr', config.otlpGrpc.addr, () => grpcReceiver.start())).port;
  const { host, port } = splitAddr(config.http.addr);
  await listenFor('http.addr', config.http.addr, () => new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(port, host, () => {
      http.off('error', reject);
      resolve();
    });
  }));
  // Rotated certificates are looked for once the ports listen, not once the store is open: the wait for a database
  // may last minutes, and a certificate renewed meanwhile must not expire in use.
  otlpTls?.start();
  httpTls?.start();
  opened.push(() => {
    otlpTls?.stop();
    httpTls?.stop();
  });
  // A PostgreSQL server out of reach is waited for (postgres.startTimeout), the ports answering meanwhile.
  const rawStore = opts.store ?? (await openStoreWhenReachable(config, { logger, now, onWaiting: (reason) => (openingReason = reason), wait: storeWait }));
  const instrumented = instrumentStore(metrics, rawStore);
  metrics.collectedCounter('store', {
    name: 'hookwatch_store_lock_timeouts_total', help: 'Ingests given up on a lock another transaction held past the ingest\'s bound (PostgreSQL: 3 s; answered 503 with Retry-After, sent again); 0 on SQLite.',
    collect: (set) => set({}, rawStore.lockTimeouts?.() ?? 0),
  });
  const store = instrumented.store;
  opened.push(() => store.close());
  // Replicas on one PostgreSQL elect one leader for alerting and retention; a SQLite process is its own leader.
  const coordination = startCoordination(rawStore, config, logger);
  opened.push(() => coordination.stop());
  // Before the first event is accepted: hashed and dropped attributes must never reach the store in clear.
  const privacy = await openPrivacy(config.privacy, rawStore);
  const ingest = new HookIngest({ store, nearThreshold: config.delivery.nearThreshold, dimensions: config.dimensions, maxPending: config.otlp.maxPendingRequests, maxFutureSkewMs: config.otlp.maxFutureSkewMs, logger, now, privacy });
  // Inline collector mode: every request is queued durably for the downstream before the 200.
  const forwarding = await startForwarding(config.forward, { logger, now, synchronous: config.sqlite.synchronous, retentionMs: config.retention.eventsMs });
  opened.push(() => forwarding?.stop());
  const logs = forwarding ? forwarding.stage.wrapLogs(ingest) : ingest;
  const passThrough = opts.passThrough ?? forwarding?.stage ?? discardPassThrough;
  // A new connection to the database: exports held while it was out of reach try their commit now.
  rawStore.onConnected?.(() => grpcReceiver.storeReachable());
  // A batch leaves its place among otlp.maxPendingRequests (an OTLP/HTTP one too): the next export held for want
  // of one tries now.
  ingest.onPlaceFreed(() => grpcReceiver.placeFreed());
  // Requests leave the forwarding queue (delivered, dead letters, expired): an export held for want of room tries now.
  forwarding?.queue.onFreed(() => grpcReceiver.placeFreed());

  registerIngestMetrics(metrics, { stats: ingest.stats, queueDepth: () => instrumented.inFlight('ingest'), capacity: config.otlp.maxPendingRequests, nearThreshold: () => ingest.nearThreshold });
  const hookMetrics = new HookMetrics({ maxSeries: config.metrics.maxHookSeries, now });
  hookMetrics.register(metrics);
  ingest.addListener(hookMetrics);
  const links: LinkContext = {
    get externalUrl() {
      return externalUrl;
    },
  };
  // Event-driven evaluation: the engine hears about every committed batch, off the OTLP response path.
  const alerting = await startAlerting({ links, config: config.alerting, db: config.db, store, logger, now, receiverTls, ...(eventTls ? { eventTls } : {}), serviceVersion: HOOKWATCH_VERSION, leader: coordination.leader, ...(coordination.alertStateStore ? { stateStore: coordination.alertStateStore, shared: true } : {}), ...opts.alerting });
  opened.push(() => alerting.stop());
  ingest.addListener(alerting.engine);
  // A replica that becomes leader takes over the alert state and undelivered notifications the last leader left,
  // and evaluates at once: an alert due while there was no leader goes out now, not at the next timer tick.
  // Guard trims stored while no replica led were announced to nobody: its alerts read their guard notes again.
  coordination.onAcquired(() => void alerting.engine.reload(true).then(() => alerting.engine.evaluateAllWithGuardNotes()));
  // One that stops leading stops delivering before its next attempt; the outbox stays for the new leader.
  coordination.onLeaderChange((leader) => {
    if (!leader) alerting.dispatcher.suspend();
  });
  // A follower that committed a batch which may fire an alert tells the leader, which evaluates those rules now;
  // one that committed guard trims tells it their hooks, whose alerts' guard notes the leader reads again.
  ingest.addListener({
    onIngested: (events) => {
      if (coordination.leader.isLeader()) return;
      const rules = alerting.engine.triggeredRules(events);
      if (rules.length > 0) coordination.publish('hookwatch_ingest', JSON.stringify(rules));
    },
    onGuardTrims: (hookIds) => {
      if (coordination.leader.isLeader()) return;
      coordination.publish('hookwatch_ingest', JSON.stringify({ guardTrims: hookIds.length > MAX_SIGNALLED_GUARD_HOOKS ? 'all' : hookIds }));
    },
  });
  coordination.onSignal((channel, payload) => {
    if (!coordination.leader.isLeader()) return;
    if (channel === 'hookwatch_silences') {
      void alerting.engine.evaluate('notify');
      return;
    }
    const signal = ingestSignal(payload);
    alerting.engine.trigger(signal.rules);
    if (signal.guardHooks === 'all' || signal.guardHooks.length > 0) void alerting.engine.noteGuardTrims(signal.guardHooks);
  });
  // Signals sent while the listening connection was down (a database restart) were missed: the leader evaluates
  // every rule once it hears again, instead of leaving what they announced to its next timer tick, and reads the
  // guard notes of its active alerts again.
  coordination.onSignalsResumed(() => void alerting.engine.evaluateAllWithGuardNotes());
  registerNotifyMetrics(metrics, alerting.dispatcher.stats, alerting.refresher);
  registerAlertEventMetrics(metrics, alerting.events.stats);
  if (forwarding) registerForwardMetrics(metrics, forwarding);
  registerAlertingMetrics(metrics, alerting.engine);
  registerClusterMetrics(metrics, coordination);
  // Retention is once-per-cluster work: only the leader deletes from the store (each replica expires its own
  // forward queue file). It runs once serving, then every hour and whenever this replica becomes leader.
  const retention = new Retention({
    store, eventsMs: config.retention.eventsMs, rollupsMs: config.retention.rollupsMs,
    isLeader: () => coordination.leader.isLeader(), ...(forwarding ? { expireForwarded: (beforeMs: number, signal: AbortSignal) => forwarding.expire(beforeMs, signal) } : {}), logger, now,
  });
  registerRetentionMetrics(metrics, retention, rawStore.kind);
  // A stat of the SQLite files at every scrape; PostgreSQL's catalog query at most once a minute, never per scrape.
  registerStoreSizeMetrics(metrics, rawStore, { refreshMs: rawStore.kind === 'sqlite' ? 0 : (opts.storeSizeRefreshMs ?? STORE_SIZE_REFRESH_MS) });
  // Each replica reloads its own file; only the leader evaluates, so a follower's reload changes what it would
  // evaluate once it leads, and which rules its batches tell the leader about.
  const reloader = new ConfigReloader({ source: opts.configSource, running: config, alerting, ingest, logger, metrics, now });

  let listening = false;
  const app = closeAfterUnreadBodies(express());
  app.disable('x-powered-by');
  app.set('query parser', parseQuery);
  // First: every request is counted and timed, those refused before any route ran included.
  app.use(requestMetrics.measure());
  guardFront(app, config);
  app.use(answerOptions());
  app.use(conditionalRequests());
  const otlpHttpPort = (): number | undefined => (listening ? otlpHttpAddress.port : undefined);
  mountRoutes(app, routeContext, { store, alerting, coordination, forwarding, privacy, reload: () => reloader.reload(), otlpHttpPort, ready: () => listening });
  // Everything serves: OTLP requests go to the store, the HTTP port to the app, and the exports held while the
  // store opened try their commit now.
  intake.open({ logs, passThrough });
  serving = app;
  grpcReceiver.storeReachable();
  listening = true;
  const httpAddress = http.address() as AddressInfo;
  if (!config.alerting.externalUrl) externalUrl = reachableUrl(config.http.addr, { boundPort: httpAddress.port, tls: httpTls !== undefined });
  // Once serving: the hooks seen in the last month get their series at 0, off the start-up path.
  void store.hookCounters({ fromMs: now() - HOOK_SERIES_SEED_MS, toMs: now() }).then(
    (known) => hookMetrics.seed([...known.values()].map((c) => c.info)),
    (err: unknown) => logger.warn('cannot read the known hooks for their /metrics series; each gets its series at its next event', { err }),
  );

  const retentionTimer = setInterval(() => void retention.run(), RETENTION_INTERVAL_MS);
  retentionTimer.unref();
  void retention.run();
  coordination.onLeaderChange((leader) => {
    if (leader) void retention.run();
  });

  let stopping: Promise<StopReport> | undefined;
  let stopSteps: ShutdownSteps | undefined;
  const stop = (): Promise<StopReport> => {
    stopping ??= (async () => {
      // First: a reload from now on would open TLS files and reconfigure components that are stopping.
      reloader.stop();
      listening = false;
      clearInterval(retentionTimer);
      otlpTls?.stop();
      httpTls?.stop();
      const steps = new ShutdownSteps(logger);
      stopSteps = steps;
      // A database server can hang (a frozen host, a network dropping packets): what waits on it gets a bound,
      // and past it the store's connections are closed without waiting for the server, which fails every store
      // call still in flight at once (503 to a client: nothing it sent was acknowledged, it sends it again). A
      // SQLite file has no server to wait on: its steps run as before.
      const cutStore = rawStore.cutConnections?.bind(rawStore);
      const stepMs = databaseStepTimeoutMs(config);
      const dbStep: ShutdownStep = cutStore ? (name, work, abandon = cutStore) => steps.run(name, stepMs, work, abandon) : steps.unbounded;
      // The flush of alert events waits on alerting.otlp.endpoint, whatever the store: it gets its own bound.
      const exportMs = alertEventFlushTimeoutMs(config);
      const exportStep: ShutdownStep = (name, work, abandon) => steps.run(name, exportMs, work, abandon);
      // Batches (and API requests) still waiting on a statement once intake stops: each gets the bound from then
      // on. Clients that hold their own requests open are bounded by shutdown.timeout alone, as before.
      const unwatch = cutStore ? steps.watch('requests waiting on the database', stepMs, instrumented.oldestStartedAt, cutStore) : () => {};
      // Intake stops at once; what is in flight drains, for as long as its clients take.
      const draining = steps.track('OTLP requests in flight', () => Promise.all([receiver.shutdown(), grpcReceiver.shutdown()]));
      // The once-per-cluster work stops (alert evaluation and deliveries, retention): only then may the lease go.
      const stopLeading = async (): Promise<void> => {
        await Promise.all([alerting.stop(dbStep, exportStep), dbStep('retention in progress', () => retention.stop())]);
        await coordination.handBack(dbStep);
      };
      // Replicas: leadership is handed over before the drain, not after it, so another replica evaluates and
      // notifies while this one drains (a batch stored meanwhile is signalled to it, as from any follower), and
      // a drain cut off by shutdown.timeout leaves no lease behind. This replica's heartbeat stays until it is
      // gone (coordination.stop): it still serves (its API, the drain, its signals) and /api/v1/cluster lists it.
      // A single process has no one to hand over to: it evaluates what the drain stores, then stops leading.
      if (coordination.replicated) await stopLeading();
      await draining;
      if (forwarding) await steps.track('forwarding delivery in flight', () => forwarding.stop());
      if (!coordination.replicated) await stopLeading();
      await dbStep('API requests in flight', () => closeServer(http), () => {
        cutStore?.();
        http.closeAllConnections();
      });
      unwatch();
      await coordination.stop(dbStep);
      await dbStep('store close', () => store.close());
      storeLock?.release();
      return { unfinished: steps.unfinished };
    })();
    return stopping;
  };

  const grpcHost = splitAddr(config.otlpGrpc.addr).host;
  const otlpGrpcUrl = `${otlpTls ? 'https' : 'http'}://${grpcHost === '0.0.0.0' || grpcHost === '' ? '127.0.0.1' : grpcHost.includes(':') ? `[${grpcHost === '::' ? '::1' : grpcHost}]` : grpcHost}:${otlpGrpcPort}`;
  return { config, store, ingest, receiver, grpcReceiver, otlpGrpcPort, otlpGrpcUrl, forwarding, alerting, coordination, retention, metrics, otlpHttpAddress, httpAddress, otlpHttpUrl: url(otlpHttpAddress, otlpTls !== undefined), httpUrl: url(httpAddress, httpTls !== undefined), externalUrl, reload: () => reloader.reload(), stop,
    shutdownProgress: () => ({ pending: stopSteps?.pending ?? [], unfinished: [...(stopSteps?.unfinished ?? [])] }) };
}
