/**
 * A bound on the store reads the API has asked for and not had answered: the store runs a few at once (SQLite:
 * store.readers worker threads; PostgreSQL: a read pool of that size) and queues the rest, so a burst of expensive
 * queries (30-day filtered overviews, breakdowns) would make every later request wait behind all of them. Past
 * http.maxPendingQueries, a query route answers 503 with Retry-After before it asks the store anything, as the
 * OTLP receivers do past otlp.maxPendingRequests; the dashboard shows it and asks again at its next refresh, not before the Retry-After.
 * A request no query route would answer (POST /api/v1/hooks, an unknown path under them) is not refused: it gets
 * the API's 405 or 404 as at any other time.
 *
 * A read is counted from when a route asks for it until the store answers it, whether or not its client is still
 * there: a client that gives up and asks again cannot pile up work the store still has to do.
 */
import type { RequestHandler, Router } from 'express';
import type { MetricsRegistry } from '../telemetry/metrics.ts';
import { allowedMethods, unavailable } from './index.ts';

/** The routes that read hook data from the store (hooks, a hook's series, breakdown, commands, guard trims; overview; fleet series). */
const QUERY_PATHS = ['/api/v1/hooks', '/api/v1/overview', '/api/v1/fleet'];

export class QueryGate {
  /** Store reads asked by the API and not answered yet. */
  pending = 0;
  /** Requests answered 503 because `pending` was at the limit. */
  refused = 0;
  readonly limit: number;

  constructor(limit: number) {
    this.limit = limit;
  }

  /**
   * Guards the query routes `router` is about to get (mount it first) and returns `store` as those routes must
   * read it: every call counted until it settles.
   */
  mount<S extends object>(router: Router, store: S): S {
    router.use(QUERY_PATHS, this.admit);
    return this.wrap(store);
  }

  private readonly admit: RequestHandler = (req, res, next) => {
    if (this.pending < this.limit) {
      next();
      return;
    }
    // A request no query route answers (another method, a path none matches) reads nothing: it gets the API's
    // usual 405 with Allow or 404, as it would below the bound, not a 503 that says to try the same again later.
    if (!allowedMethods(req.app, req.originalUrl.split('?')[0] ?? '').includes(req.method)) {
      next();
      return;
    }
    this.refused++;
    unavailable(res, `hookwatch is answering too many queries at once (http.maxPendingQueries: ${this.limit} store reads waiting); try again shortly`);
  };

  private wrap<S extends object>(store: S): S {
    const wrapped = new Map<PropertyKey, unknown>();
    return new Proxy(store, {
      get: (target, prop, receiver) => {
        const value: unknown = Reflect.get(target, prop, receiver);
        if (typeof value !== 'function') return value;
        let fn = wrapped.get(prop);
        if (!fn) {
          fn = (...args: unknown[]): unknown => {
            const result: unknown = (value as (...a: unknown[]) => unknown).apply(target, args);
            if (!(result instanceof Promise)) return result;
            this.pending++;
            const done = (): void => void this.pending--;
            result.then(done, done);
            return result;
          };
          wrapped.set(prop, fn);
        }
        return fn;
      },
    });
  }
}

/** hookwatch_api_queries_pending, its limit, and the requests refused at it. */
export function registerQueryMetrics(metrics: MetricsRegistry, gate: QueryGate): void {
  metrics.collectedGauge('api', { name: 'hookwatch_api_queries_pending', help: 'Store reads the API has asked for and not had answered (running or waiting for a read connection).', collect: (set) => set({}, gate.pending) });
  metrics.gauge({ name: 'hookwatch_api_queries_pending_capacity', help: 'Store reads the API may have pending before query routes answer 503 + Retry-After (http.maxPendingQueries).' }).set(gate.limit);
  metrics.collectedCounter('api', { name: 'hookwatch_api_queries_refused_total', help: 'API query requests answered 503 + Retry-After because http.maxPendingQueries store reads were pending.', collect: (set) => set({}, gate.refused) });
}
