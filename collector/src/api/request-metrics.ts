/**
 * The HTTP port's requests (API, dashboard, /metrics, probes, reload) for /metrics, as Prometheus and Grafana count
 * their own: hookwatch_http_requests_total{handler,code} and hookwatch_http_request_duration_seconds{handler}.
 *
 * `handler` is the pattern of the route that answered (`/api/v1/hooks/:id/series`), never the path a client sent,
 * so the label takes a bounded set of values whatever paths arrive: `/dashboard` for the dashboard's pages, modules
 * and files, the pattern of the route a path is for when something answered before any route ran (a 401, a 405, a
 * query refused at http.maxPendingQueries), `other` for a path no route is for, and `refused` for what the HTTP
 * parser or Node's server refuses before a handler sees a request (counted only: no request was read whole to time).
 * `code` is the status answered; 499 for a request its client gave up on before the answer was sent.
 */
import type { ServerResponse } from 'node:http';
import type { NextFunction, Request, Response, Router } from 'express';
import type { Counter, Histogram } from 'prom-client';
import { targetPath } from '../net/allowed-hosts.ts';
import { parserRefusal, refusalStatus } from '../net/parser-refusals.ts';
import type { MetricsRegistry } from '../telemetry/metrics.ts';
import { appStack, routeLayers, type RouteLayer } from './route-layers.ts';

/** The dashboard's requests, all of them: a page, a module or a file says nothing an operator acts on apart. */
export const DASHBOARD_HANDLER = '/dashboard';
const OTHER = 'other';
const REFUSED = 'refused';
/** A request its client gave up on (nginx's status, as hookwatch_otlp_requests_total counts one). */
const CLIENT_CLOSED = 499;

/** Seconds: an answer is meant within 50 ms at the 95th percentile; a 30-day query may take seconds. */
const HTTP_LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

export class RequestMetrics {
  private readonly requests: Counter<'handler' | 'code'>;
  private readonly duration: Histogram<'handler'>;
  /** The handler each route of the app counts under. */
  private readonly names = new Map<unknown, string>();
  /** The app's routes in the order they are tried, for a request answered before any of them ran. */
  private table: { layer: RouteLayer; name: string }[] = [];
  /** Responses something other than a route answered, and the handler they count under. */
  private readonly answered = new WeakMap<ServerResponse, string>();

  constructor(metrics: MetricsRegistry) {
    this.requests = metrics.counter({
      name: 'hookwatch_http_requests_total', help: 'Requests to the HTTP port (API, dashboard, /metrics, probes) by handler (route pattern, /dashboard, other, refused) and status code (499: the client gave up).',
      labelNames: ['handler', 'code'],
    });
    this.duration = metrics.histogram({
      name: 'hookwatch_http_request_duration_seconds', help: 'Time from a request reaching the HTTP port\'s app until its answer was sent (or its client gave up), by handler.',
      labelNames: ['handler'], buckets: HTTP_LATENCY_BUCKETS,
    });
  }

  /** Express middleware, first on the app: counts and times each request once it ends. */
  measure(): (req: Request, res: Response, next: NextFunction) => void {
    return (req, res, next) => {
      const start = performance.now();
      res.once('close', () => {
        const handler = this.handlerOf(req, res);
        this.requests.inc({ handler, code: String(statusOf(req, res)) });
        this.duration.observe({ handler }, (performance.now() - start) / 1000);
      });
      next();
    };
  }

  /**
   * Names the routes of `app`, once every router is mounted: each by its pattern, those of `groups`' routers by
   * the group's name, a catch-all of every path (`/*path`) `other`; each handler's series then start at 0
   * (code 200, as Prometheus starts its own), so the first request is an increase.
   */
  nameRoutes(app: unknown, groups: Readonly<Record<string, Router>>): void {
    const grouped = new Map<unknown, string>();
    for (const [name, router] of Object.entries(groups)) for (const layer of routeLayers(router.stack as RouteLayer[])) grouped.set(layer.route, name);
    this.names.clear();
    this.table = routeLayers(appStack(app)).map((layer) => {
      const pattern = String(layer.route.path);
      const name = pattern.startsWith('/*') ? OTHER : grouped.get(layer.route) ?? pattern;
      this.names.set(layer.route, name);
      return { layer, name };
    });
    for (const handler of new Set(this.names.values())) {
      if (handler === OTHER) continue;
      this.requests.inc({ handler, code: '200' }, 0);
      this.duration.zero({ handler });
    }
  }

  /** Counts `res` under `handler`: for what answers outside a route (the dashboard's files). */
  answeredBy(res: ServerResponse, handler: string): void {
    this.answered.set(res, handler);
  }

  /** A refusal of a request no handler saw, answered with `status`. */
  refused(status: number): void {
    this.requests.inc({ handler: REFUSED, code: String(status) });
  }

  private handlerOf(req: Request, res: Response): string {
    const marked = this.answered.get(res);
    if (marked !== undefined) return marked;
    const named = this.names.get((req as { route?: unknown }).route);
    if (named !== undefined) return named;
    // Answered before any route ran: the route the path is for, whatever the method.
    const path = targetPath(req.originalUrl);
    for (const { layer, name } of this.table) {
      try {
        if (layer.match?.(path)) return name;
      } catch {
        // A path that is not valid percent-encoding matches no route.
      }
    }
    return OTHER;
  }
}

/** The status answered; for a request whose answer was never sent, why: the parser's refusal of its body, or its client gone. */
function statusOf(req: Request, res: Response): number {
  if (res.writableFinished) return res.statusCode;
  const refused = parserRefusal(req.socket.errored);
  return refused ? refusalStatus(refused) : CLIENT_CLOSED;
}
