/**
 * The HTTP API (/api/v1, JSON, camelCase) plus /healthz and /readyz. Routes stay thin: validate parameters,
 * ask the store, shape JSON. The dashboard is served from the same Express app.
 */
import type { RequestListener, Server } from 'node:http';
import { parse as parseQueryString } from 'node:querystring';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { type BreakdownResponse, type FleetSeriesHook, type FleetSeriesResponse, type FleetSeriesRest, type HookSummary, type HooksResponse, type OverviewResponse, type RangeCoverage, type SeriesBucket, type SeriesResponse } from '../../../shared/src/api.ts';
import { DELIVERY_STATUSES, measuredOnly, persistedAtLeast, type DeliveryStatus } from '../../../shared/src/cliff.ts';
import { emptyRow, toCounters, totalCounters } from '../store/counters.ts';
import type { HookCounters } from '../store/model.ts';
import { dimensionNames } from '../pipeline/settings.ts';
import { StoreUnavailableError, UnknownDimensionError, type HookInfo, type Store } from '../store/store.ts';
import { classifyCounters } from '../hooks/cliff.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { Privacy } from '../privacy/index.ts';
import { BadBodyError, BadParameterError, echoed } from '../request-error.ts';
import { MAX_FLEET_HOOK_BUCKETS, ParamError, breakdownOrder, breakdownPageOf, bucketEnd, bucketStart, bucketStarts, hookCursor, nameMatches, onlyParams, pageAfter, parseBreakdownCursor, parseFilters, parseHookCursor, parseHookId, parseHookIds, parseLimit, parseNameFilter, parseRange, parseStep, single, type HookPosition, type TimeRange } from './params.ts';
import { addTranscriptCommandsRoute } from './transcript-commands.ts';
import type { OtlpRefusals } from '../receiver/refusals.ts';
import type { QueryGate } from './query-gate.ts';
import { breakdownRow, clientVersion, headroom, hookSummary, seriesBucket, wireCounters } from './wire.ts';
import { formatRfc3339, formatRfc3339OrNull } from '../rfc3339.ts';
import { answerParserRefusals, malformedMessage, refusalStatus, type ParserRefusal } from '../net/parser-refusals.ts';
import { answerServerRefusals, type ServerRefusal } from '../net/server-refusals.ts';
import { appStack, routeLayers } from './route-layers.ts';

export interface ApiOptions {
  store: Store;
  dimensions: readonly string[];
  logger: Logger;
  now?: () => number;
  /** Extra readiness checks (e.g. the OTLP receiver is listening). */
  ready?: () => boolean;
  /** Throws, naming the file and the cause, while the forwarding queue cannot take writes (inline mode). */
  forwardQueueReady?: () => void;
  /** Digests filter values given in cleartext for hashed attributes, as they were digested before storage. */
  privacy?: Pick<Privacy, 'filters'>;
  /** Port the OTLP/HTTP receiver listens on, once it does (shown in the dashboard's setup snippet). */
  otlpHttpPort?: () => number | undefined;
  /** Whether that port speaks TLS (otlp.tls): the setup snippet's scheme. */
  otlpHttpTls?: boolean;
  /** Whether the receivers require otlp.ingestToken: the setup snippet sets the header (never the token). */
  otlpIngestToken?: boolean;
  /** Whether the receivers require client certificates (mutual TLS): the setup snippet sets them (never a path). */
  otlpClientCertificate?: boolean;
  /** Bounds the store reads the query routes have pending (http.maxPendingQueries); unbounded without. */
  queries?: QueryGate;
  /** The OTLP requests the receivers of this process refused lately (the overview's otlpRefusals). */
  otlpRefusals?: Pick<OtlpRefusals, 'recent'>;
}

/** 404 for a well-formed hook id hookwatch keeps no hook under. */
function hookNotFound(res: Response, id: string): void {
  res.status(404).json({ error: { code: 'not_found', message: `no hook with id ${id}` } });
}

const RISK: Record<DeliveryStatus, number> = { over: 0, near: 1, unknown: 2, ok: 3 };

/** What byRisk ranks a hook by: the fields of its summary (hookSummary) that say how close it is to the cap. */
type RiskKeys = Pick<HookSummary, 'id' | 'status' | 'headroom' | 'hookName' | 'outputsPersisted' | 'executionsWithPersisted'>;

/** Riskiest first: persisted outputs, then least headroom; ties by name, then id (the same from one page to the next). */
function byRisk(a: RiskKeys, b: RiskKeys): number {
  return RISK[a.status] - RISK[b.status]
    || persistedAtLeast(b) - persistedAtLeast(a)
    || (a.headroom ?? Infinity) - (b.headroom ?? Infinity)
    || a.hookName.localeCompare(b.hookName)
    || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** Where a hook list page ending on `h` ended (the next page's cursor names it). */
function hookPosition(h: RiskKeys): HookPosition {
  return { status: h.status, persisted: persistedAtLeast(h), headroom: h.headroom, hookName: h.hookName, id: h.id };
}

/** byRisk of the position a cursor names against a hook. */
function afterPosition(p: HookPosition, h: RiskKeys): number {
  return byRisk({ ...p, outputsPersisted: p.persisted, executionsWithPersisted: p.persisted }, h);
}

/** A hook of an answer with what byRisk ranks it by. */
type RankedHook = RiskKeys & { counters: HookCounters & { info: HookInfo } };

/**
 * The hooks of hookCounters' answer, riskiest first. A fleet of thousands of hooks is ranked on the figures the
 * order needs: the whole summary (hookSummary) is built for the hooks an answer returns, not for every hook.
 */
function ranked(byHook: Awaited<ReturnType<Store['hookCounters']>>): RankedHook[] {
  const out: RankedHook[] = [];
  for (const c of byHook.values()) {
    out.push({ counters: c, id: c.info.id, status: classifyCounters(c), headroom: headroom(c), hookName: c.info.hookName, outputsPersisted: c.outputsPersisted, executionsWithPersisted: c.executionsWithPersisted });
  }
  return out.sort(byRisk);
}


/**
 * What a route taking GET alone (a probe, /metrics) answers another method, mounted with route().all: 405 saying
 * so, outside /api, whose catch-all answers it for the API's routes. route().all, not app.all: the route then says
 * it takes every method (`_all`), not each one by name, so the methods OPTIONS lists for it stay GET and HEAD.
 */
export function getOnly(path: string, what: string): (req: Request, res: Response) => void {
  return (_req, res) => {
    res.status(405).set('allow', 'GET, HEAD').json({ error: { code: 'method_not_allowed', message: `GET ${path} for ${what}` } });
  };
}

/** getOnly for a probe (/healthz, /readyz), the opening app's (service.ts) as the API's. */
export const probeOnly = (path: string): ((req: Request, res: Response) => void) => getOnly(path, "the probe's answer");

export function createApiRouter(opts: ApiOptions): Router {
  const router = express.Router();
  const store = opts.queries ? opts.queries.mount(router, opts.store) : opts.store;
  const now = opts.now ?? Date.now;
  const dims = dimensionNames(opts.dimensions);
  const filtersOf = (q: Record<string, unknown>, reserved: readonly string[]): Record<string, string> => {
    const filters = parseFilters(q, reserved, dims);
    return opts.privacy ? opts.privacy.filters(filters) : filters;
  };

  // The range an answer reads, echoes as its from and to, and buckets by: the range retention lets it cover
  // (Store.coverage), with `coverage` naming the range asked and what limited it where the two differ.
  const covered = async (asked: TimeRange, filters: Record<string, string>, dimension?: string): Promise<TimeRange & { coverage?: { coverage: RangeCoverage } }> => {
    const c = await store.coverage({ ...asked, filters }, dimension);
    if (c.limitedBy === undefined) return asked;
    return { fromMs: c.fromMs, toMs: c.toMs, coverage: { coverage: { askedFrom: formatRfc3339(asked.fromMs), askedTo: formatRfc3339(asked.toMs), limitedBy: c.limitedBy } } };
  };

  router.route('/healthz').get((_req, res) => {
    res.json({ status: 'ok' });
  }).all(probeOnly('/healthz'));

  router.route('/readyz').get(async (_req, res) => {
    try {
      await store.ping();
      // Every OTLP request goes through the forwarding queue too: while it cannot take them, none is served.
      opts.forwardQueueReady?.();
      if (opts.ready && !opts.ready()) throw new Error('receivers are not listening');
      res.json({ status: 'ready' });
    } catch (err) {
      res.status(503).json({ status: 'not ready', reason: (err as Error).message });
    }
  }).all(probeOnly('/readyz'));

  router.get('/api/v1/hooks', async (req, res) => {
    const q = req.query as Record<string, unknown>;
    const status = single(q, 'status');
    if (status !== undefined && !DELIVERY_STATUSES.includes(status as DeliveryStatus)) {
      throw new ParamError('status', `status must be one of ${DELIVERY_STATUSES.join(', ')}`);
    }
    const name = parseNameFilter(q);
    const limit = parseLimit(q);
    const after = parseHookCursor(q);
    const asked = parseRange(q, now());
    const filters = filtersOf(q, ['from', 'to', 'status', 'name', 'limit', 'cursor']);
    const { fromMs, toMs, coverage } = await covered(asked, filters);
    const hooks = ranked(await store.hookCounters({ fromMs, toMs, filters }));
    // Status and name narrow the ranked list: pages and `total` count the hooks that match, riskiest first. A page
    // starts after the hook the previous one ended on, not at a count: a hook that moves up between two requests
    // shifts no other onto the next page twice.
    const matching = status || name !== undefined ? hooks.filter((h) => (!status || h.status === status) && nameMatches(h.hookName, name)) : hooks;
    const { items, total, nextCursor } = pageAfter(matching, limit, after, afterPosition, (h) => hookCursor(hookPosition(h)));
    const body: HooksResponse = { from: formatRfc3339(fromMs), to: formatRfc3339(toMs), ...coverage, hooks: items.map((h) => hookSummary(h.counters.info, h.counters)), total, nextCursor };
    res.json(body);
  });

  router.get('/api/v1/hooks/:id', async (req, res) => {
    const id = parseHookId(String(req.params['id']));
    const q = req.query as Record<string, unknown>;
    const asked = parseRange(q, now());
    const filters = filtersOf(q, ['from', 'to']);
    // Parameters first, as the series and breakdown: a bad one is 400 whether or not the hook is known.
    const info = await store.hook(id);
    if (!info) {
      hookNotFound(res, id);
      return;
    }
    const { coverage, ...range } = await covered(asked, filters);
    const c = (await store.hookCounters({ ...range, filters, hookId: id })).get(id);
    res.json({ from: formatRfc3339(range.fromMs), to: formatRfc3339(range.toMs), ...coverage, hook: hookSummary(info, c ?? toCounters(emptyRow())) });
  });

  router.get('/api/v1/hooks/:id/series', async (req, res) => {
    const id = parseHookId(String(req.params['id']));
    const q = req.query as Record<string, unknown>;
    const at = now();
    const asked = parseRange(q, at);
    const step = parseStep(q, asked);
    const filters = filtersOf(q, ['from', 'to', 'step']);
    const info = await store.hook(id);
    if (!info) {
      hookNotFound(res, id);
      return;
    }
    const { coverage, ...range } = await covered(asked, filters);
    const stepMs = step * 1000;
    const map = await store.series(id, { ...range, stepMs, filters });
    const buckets: SeriesBucket[] = [];
    for (const t of bucketStarts(range, stepMs)) {
      buckets.push(seriesBucket(bucketStart(range, t), bucketEnd(range, t, stepMs, at), map.get(t) ?? toCounters(emptyRow())));
    }
    const body: SeriesResponse = { hook: { id, hookEvent: info.hookEvent, hookName: info.hookName }, from: formatRfc3339(range.fromMs), to: formatRfc3339(range.toMs), ...coverage, step, buckets };
    res.json(body);
  });

  router.get('/api/v1/hooks/:id/breakdown', async (req, res) => {
    const id = parseHookId(String(req.params['id']));
    const q = req.query as Record<string, unknown>;
    const dimension = single(q, 'dimension') ?? 'service.version';
    if (!dims.includes(dimension)) throw new ParamError('dimension', `unknown dimension ${echoed(dimension)}; known: ${dims.join(', ')}`);
    const asked = parseRange(q, now());
    const limit = parseLimit(q);
    const after = parseBreakdownCursor(q);
    const filters = filtersOf(q, ['from', 'to', 'dimension', 'limit', 'cursor']);
    // As the hook's page and series: a hook hookwatch does not know is 404, not an empty breakdown.
    if (!(await store.hook(id))) {
      hookNotFound(res, id);
      return;
    }
    const { coverage, ...range } = await covered(asked, filters, dimension);
    // A breakdown by session or user grows with the fleet: one page of rows, most executions first, in an order
    // that stays the same from one page to the next (ties by value), after the row the cursor names.
    const rows = (await store.breakdown(id, dimension, { ...range, filters })).sort(breakdownOrder);
    const { items, total, nextCursor } = breakdownPageOf(rows, limit, after);
    const body: BreakdownResponse = { hookId: id, dimension, from: formatRfc3339(range.fromMs), to: formatRfc3339(range.toMs), ...coverage, rows: items.map(breakdownRow), total, nextCursor };
    res.json(body);
  });

  addTranscriptCommandsRoute(router, { store, now });

  router.get('/api/v1/overview', async (req, res) => {
    const q = req.query as Record<string, unknown>;
    const asked = parseRange(q, now());
    const filters = filtersOf(q, ['from', 'to']);
    const { fromMs, toMs, coverage } = await covered(asked, filters);
    // Three questions about the same range, asked at once: the store reads them on its read connections side by
    // side (as many as it has), and the raw events both the counters and the versions read are read once.
    const [byHook, last, versions] = await Promise.all([
      store.hookCounters({ fromMs, toMs, filters }),
      store.lastEventMs(filters),
      store.clientVersions({ fromMs, toMs, filters }),
    ]);
    const hooks = ranked(byHook);
    const totals = totalCounters([...byHook.values()]);
    const statusCounts = { over: 0, near: 0, ok: 0, unknown: 0 } as Record<DeliveryStatus, number>;
    for (const h of hooks) statusCounts[h.status]++;
    const port = opts.otlpHttpPort?.();
    const body: OverviewResponse = {
      from: formatRfc3339(fromMs),
      to: formatRfc3339(toMs),
      ...coverage,
      totals: wireCounters(totals),
      hooks: hooks.length,
      statusCounts,
      persisted: hooks.reduce((s, h) => s + persistedAtLeast(h), 0),
      measuredOnly: hooks.reduce((s, h) => s + measuredOnly(h), 0),
      sizeDataShare: totals.executions > 0 ? (totals.executions - totals.sizeUnknownExecutions) / totals.executions : null,
      clientVersions: versions.map(clientVersion),
      lastEventAt: formatRfc3339OrNull(last),
      ...(port === undefined ? {} : { otlpHttpPort: port, otlpHttpTls: opts.otlpHttpTls === true, otlpIngestToken: opts.otlpIngestToken === true, otlpClientCertificate: opts.otlpClientCertificate === true }),
      ...(opts.otlpRefusals ? { otlpRefusals: opts.otlpRefusals.recent().map(({ lastAtMs, ...r }) => ({ ...r, lastAt: formatRfc3339(lastAtMs) })) } : {}),
    };
    res.json(body);
  });

  router.get('/api/v1/fleet/series', async (req, res) => {
    const q = req.query as Record<string, unknown>;
    const at = now();
    const asked = parseRange(q, at);
    const step = parseStep(q, asked);
    const filters = filtersOf(q, ['from', 'to', 'step', 'limit', 'ids']);
    const { coverage, ...range } = await covered(asked, filters);
    const limit = parseLimit(q);
    // Only the hooks named, as if the fleet were those: a table showing rows past the riskiest `limit` (a search,
    // every hook listed) asks for their series so, a screenful at a time, and the store reads those hooks only.
    const ids = parseHookIds(q);
    const only = ids === undefined ? {} : { hookIds: [...ids] };
    const stepMs = step * 1000;
    const counters = await store.hookCounters({ ...range, filters, ...only });
    const starts = bucketStarts(range, stepMs);
    const first = starts[0] ?? 0;
    // The riskiest `limit` hooks each get their series (the rows /api/v1/hooks lists first); the rest are summed,
    // so the answer stays bounded whatever the number of hooks, and the fleet's totals stay whole.
    const risky = ranked(counters);
    // Bounded by what it holds, not by what was asked: a small fleet is answered at any step.
    const listed = Math.min(limit, risky.length);
    if (listed * starts.length > MAX_FLEET_HOOK_BUCKETS) {
      throw new ParamError('limit', `limit: ${listed} hooks × ${starts.length} buckets is more than ${MAX_FLEET_HOOK_BUCKETS} hook-buckets in one answer; at this step ask for at most ${Math.floor(MAX_FLEET_HOOK_BUCKETS / starts.length)} hooks (limit), or give a longer step`);
    }
    const byId = new Map<string, FleetSeriesHook & { total: number }>();
    for (const hk of risky.slice(0, limit)) {
      const { info } = hk.counters;
      byId.set(info.id, {
        id: info.id, hookEvent: info.hookEvent, hookName: info.hookName, total: persistedAtLeast(hk),
        largest: starts.map(() => null), outputsPersisted: starts.map(() => 0), executionsWithPersisted: starts.map(() => 0), executions: starts.map(() => 0), sizeUnknownExecutions: starts.map(() => 0),
      });
    }
    const restHooks = risky.slice(limit);
    const rest: FleetSeriesRest | null = restHooks.length === 0 ? null : {
      hooks: restHooks.length, hooksWithPersisted: restHooks.filter((hk) => persistedAtLeast(hk) > 0).length,
      largest: starts.map(() => null), persisted: starts.map(() => 0), measuredOnly: starts.map(() => 0), executions: starts.map(() => 0), sizeUnknownExecutions: starts.map(() => 0),
    };
    // Ranked first, then read: the listed hooks' rows (one per hook and bucket, as many as the answer holds) and
    // the rest's sums (one per bucket), so what is read follows the answer, not the size of the fleet.
    const listedIds = [...byId.keys()];
    const [rows, sums] = await Promise.all([
      listedIds.length === 0 ? [] : store.fleetSeries({ ...range, stepMs, filters, hookIds: listedIds }),
      rest ? store.fleetRest({ ...range, stepMs, filters, ...only }, listedIds) : [],
    ]);
    for (const r of rows) {
      const i = (r.bucketMs - first) / stepMs;
      const hk = byId.get(r.hookId);
      if (i < 0 || i >= starts.length || !hk) continue;
      hk.largest[i] = r.largest;
      hk.outputsPersisted[i] = r.outputsPersisted;
      hk.executionsWithPersisted[i] = r.executionsWithPersisted;
      hk.executions[i] = r.executions;
      hk.sizeUnknownExecutions[i] = r.sizeUnknownExecutions;
    }
    for (const r of sums) {
      const i = (r.bucketMs - first) / stepMs;
      if (!rest || i < 0 || i >= starts.length) continue;
      const largest = rest.largest[i] ?? null;
      rest.largest[i] = r.largest === null ? largest : Math.max(largest ?? 0, r.largest);
      rest.persisted[i] = (rest.persisted[i] ?? 0) + r.persisted;
      rest.measuredOnly[i] = (rest.measuredOnly[i] ?? 0) + r.measuredOnly;
      rest.executions[i] = (rest.executions[i] ?? 0) + r.executions;
      rest.sizeUnknownExecutions[i] = (rest.sizeUnknownExecutions[i] ?? 0) + r.sizeUnknownExecutions;
    }
    const hooks = [...byId.values()].sort((a, b) => b.total - a.total || a.hookName.localeCompare(b.hookName));
    const body: FleetSeriesResponse = {
      from: formatRfc3339(range.fromMs), to: formatRfc3339(range.toMs), ...coverage, step, buckets: starts.map((t) => formatRfc3339(bucketStart(range, t))),
      ends: starts.map((t) => formatRfc3339(bucketEnd(range, t, stepMs, at))),
      hooks: hooks.map(({ total: _total, ...rest }) => rest),
      rest,
      total: risky.length,
    };
    res.json(body);
  });

  router.get('/api/v1/dimensions', (req, res) => {
    onlyParams(req.query as Record<string, unknown>, []);
    res.json({ dimensions: dims });
  });

  router.use('/api', (req, res) => {
    // A route that exists with other methods: 405 with Allow (RFC 9110 §15.5.6), not "no such route".
    const allow = allowedMethods(req.app, req.originalUrl.split('?')[0] ?? '');
    if (allow.length > 0) {
      res.status(405).set('allow', allow.join(', ')).json({ error: { code: 'method_not_allowed', message: `${req.method} is not allowed on this route; allowed: ${allow.join(', ')}` } });
      return;
    }
    res.status(404).json({ error: { code: 'not_found', message: 'no such API route; see README "API reference"' } });
  });

  router.use(apiErrorHandler(opts.logger));
  return router;
}

/**
 * The API's answer to an error a route passed on, the one error path of every /api route: 400 naming the
 * parameter (or the body that cannot be read), 503 with Retry-After while the store cannot serve, 500 JSON
 * (logged) otherwise. The service also puts it after every router, so an error a router
 * passes on never reaches Express's HTML page.
 */
export function apiErrorHandler(logger: Logger): (err: unknown, req: Request, res: Response, next: NextFunction) => void {
  return (err, _req, res, next) => {
    if (res.headersSent) {
      next(err);
      return;
    }
    // A query parameter, a path segment or a body field (a silence's): named, so a client sees what to fix.
    if (err instanceof BadParameterError) {
      res.status(400).json({ error: { code: 'bad_parameter', message: err.message, parameter: err.parameter } });
      return;
    }
    if (err instanceof BadBodyError) {
      res.status(400).json({ error: { code: 'bad_body', message: err.message } });
      return;
    }
    if (err instanceof StoreUnavailableError) {
      unavailable(res, err.message);
      return;
    }
    // express.json's refusals: a body that is not JSON, too large (413), in another charset or encoding (415).
    if (isBodyRefusal(err)) {
      const message = err.type === 'entity.parse.failed' ? 'body is not valid JSON'
        : err.type === 'entity.too.large' && typeof err.limit === 'number' ? `body larger than ${err.limit / 1024} KiB`
          : String(err.message);
      res.status(err.status).json({ error: { code: err.status === 415 ? 'unsupported_media_type' : 'bad_body', message } });
      return;
    }
    if (err instanceof UnknownDimensionError) {
      res.status(400).json({ error: { code: 'bad_parameter', message: err.message } });
      return;
    }
    // The router refuses a path segment that is not valid percent-encoding with a URIError marked 400.
    if (err instanceof URIError && (err as { status?: unknown }).status === 400) {
      res.status(400).json({ error: { code: 'bad_request', message: 'malformed URL: a path segment is not valid percent-encoding' } });
      return;
    }
    logger.error('api request failed', { err });
    res.status(500).json({ error: { code: 'internal', message: 'internal error' } });
  };
}

/** A refusal of express.json (an http-error with a `type`, meant for the client): its status says which. */
export function isBodyRefusal(err: unknown): err is { type: string; status: number; limit?: unknown; message?: unknown } {
  const e = err as { type?: unknown; status?: unknown; expose?: unknown } | undefined;
  return typeof e?.type === 'string' && e.expose === true && typeof e.status === 'number' && e.status >= 400 && e.status < 500;
}

/** The API's error code and message for each request the HTTP parser refuses; a malformed one is bad_request. */
const CLIENT_ERRORS: Record<Exclude<ParserRefusal, 'malformed'>, [string, string]> = {
  header_overflow: ['bad_request', 'the request line and headers (the URL and its query included) are larger than 16 KiB: send fewer or shorter parameters'],
  chunk_extensions_overflow: ['bad_body', 'chunk extensions larger than 16 KiB'],
  request_timeout: ['request_timeout', 'the request was not received in full within http.requestTimeout'],
};

/** The API's status and error code for each request Node's server would refuse itself. */
const SERVER_REFUSALS: Record<ServerRefusal, [number, string]> = {
  expectation_failed: [417, 'expectation_failed'],
  bad_request: [400, 'bad_request'],
  not_implemented: [501, 'not_implemented'],
  // A client taking the port for a proxy: no route is named, so there is none to list the methods of.
  connect: [400, 'bad_request'],
};

const jsonError = (code: string, message: string): string => JSON.stringify({ error: { code, message } });

/**
 * Serves `app` on `server` (made with HOST_CHECKED_BY_PORT), answering a request the HTTP parser refuses as Node
 * would (431 for a URL over the header limit, 408 past http.requestTimeout, 400 otherwise, then the connection is
 * closed), and one Node's server would refuse itself (an Expect other than 100-continue, HTTP/1.1 without Host,
 * CONNECT) or should (Host twice, or no host and port; a Transfer-Encoding not ending in chunked, which Node
 * refuses only once a handler has it; 501 for a transfer coding before chunked, which Node passes on undone), but
 * with the API's JSON error body saying what was wrong, and the headers of every answer of the port (`headers`:
 * hardeningHeaders, hookwatch's mark among them), where Node's carry no body or are no answer: a script asking with
 * too long a query read an empty answer. `refused` is told the status of each refusal of a request no handler has
 * seen (to count it: the handlers' own requests are counted as they end).
 */
export function answerClientErrors(server: Server, app: RequestListener, headers: Record<string, string>, refused: (status: number) => void = () => {}): void {
  answerParserRefusals(server, (refusal, _req, err) => {
    const [code, message] = refusal === 'malformed' ? ['bad_request', malformedMessage(err)] : CLIENT_ERRORS[refusal];
    return { contentType: 'application/json; charset=utf-8', body: jsonError(code, message), headers };
  }, (refusal) => refused(refusalStatus(refusal)));
  answerServerRefusals(server, app, 'CONNECT is not allowed on this port, which is no proxy; the API is under /api/v1', (refusal, _req, message) => {
    const [status, code] = SERVER_REFUSALS[refusal];
    refused(status);
    return { status, contentType: 'application/json; charset=utf-8', body: jsonError(code, message), headers };
  });
}

/** Seconds a client waits before asking again while the store cannot serve. */
export const RETRY_AFTER_SECONDS = 5;

/** 503 with Retry-After: the store (or the shared state) cannot serve now; the same request may pass later. */
export function unavailable(res: Response, message: string): void {
  res.status(503).set('retry-after', String(RETRY_AFTER_SECONDS)).json({ error: { code: 'unavailable', message } });
}

/**
 * OPTIONS on any route that exists: 204 with the same `Allow` a 405 there gives, from every router alike (each
 * Express router would answer it for its own routes only, and the API's catch-all 405). `OPTIONS *` asks about
 * the server itself (RFC 9110 section 9.3.7): 204 with every method some route takes, and OPTIONS. No CORS header
 * is ever added, so a browser's preflight from a page on another origin fails: the API is not readable
 * cross-origin. Mounted before the routers; a path no route matches goes on (404).
 */
export function answerOptions(): (req: Request, res: Response, next: NextFunction) => void {
  return (req, res, next) => {
    if (req.method !== 'OPTIONS') {
      next();
      return;
    }
    const allow = req.url === '*' ? [...allowedMethods(req.app), 'OPTIONS'].sort() : allowedMethods(req.app, req.path);
    if (allow.length === 0) {
      next();
      return;
    }
    res.status(204).set('allow', allow.join(', ')).end();
  };
}

/**
 * The app's query parser (`app.set('query parser', parseQuery)`): Express's own, Node's querystring, with no cap on
 * the number of pairs. At its default of 1,000, empty ones (`&&`) included, it dropped whatever came after without a
 * word, so a filter past them was ignored and the answer covered the whole fleet. The header limit (16 KiB)
 * bounds a query anyway, and every route refuses a parameter it does not take.
 */
export function parseQuery(query: string): Record<string, unknown> {
  return parseQueryString(query, '&', '=', { maxKeys: 0 });
}

/**
 * A conditional GET is answered on its validators alone (RFC 9110 §13.2.1): a request's `Cache-Control` speaks to
 * the caches on the way, and hookwatch, the origin, keeps none. fetch() (Node's and browsers') adds
 * `Cache-Control: no-cache` to every request that carries `If-None-Match`, which Express's freshness check takes
 * as "never 304", so a script polling with the ETag it was given got the whole answer every time.
 */
export function conditionalRequests(): (req: Request, res: Response, next: NextFunction) => void {
  return (req, _res, next) => {
    if (req.headers['if-none-match'] !== undefined) delete req.headers['cache-control'];
    next();
  };
}

/**
 * The methods the app's routes (catch-alls aside) answer on `path`, or on any path without one (GET implies HEAD),
 * upper case and sorted; [] when none matches.
 */
export function allowedMethods(application: unknown, path?: string): string[] {
  const found = new Set<string>();
  for (const layer of routeLayers(appStack(application))) {
    // A catch-all (the dashboard's pages) matches every path: it says nothing about this one.
    if (String(layer.route.path).includes('*')) continue;
    if (path === undefined || layer.match?.(path)) for (const [m, on] of Object.entries(layer.route.methods)) if (on && m !== '_all') found.add(m.toUpperCase());
  }
  if (found.has('GET')) found.add('HEAD');
  return [...found].sort();
}
