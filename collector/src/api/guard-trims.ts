/**
 * GET /api/v1/hooks/:id/guard-trims: what `hookwatch guard` trimmed for one hook over a range (the largest
 * trim's sent and delivered sizes, and per-bucket maxima in buckets that start and end as the series buckets do),
 * for the hook page.
 */
import express, { type Router } from 'express';
import type { GuardTrimsResponse } from '../../../shared/src/guard-trims.ts';
import type { Store } from '../store/store.ts';
import { bucketEnd, bucketStart, onlyParams, parseHookId, parseRange, parseStep } from './params.ts';
import type { QueryGate } from './query-gate.ts';
import { formatRfc3339 } from '../rfc3339.ts';

export interface GuardTrimsApiOptions {
  store: Store;
  now?: () => number;
  /** Bounds the store reads the query routes have pending (http.maxPendingQueries). */
  queries?: QueryGate;
}

/** The guard trims route; mounted before the API router, whose /api catch-all answers 404. */
export function createGuardTrimsRouter(opts: GuardTrimsApiOptions): Router {
  const now = opts.now ?? Date.now;
  const router = express.Router();
  const store = opts.queries ? opts.queries.mount(router, opts.store) : opts.store;
  router.get('/api/v1/hooks/:id/guard-trims', async (req, res) => {
    const id = parseHookId(String(req.params['id']));
    const q = req.query as Record<string, unknown>;
    onlyParams(q, ['from', 'to', 'step']);
    const at = now();
    const range = parseRange(q, at);
    const step = parseStep(q, range);
    const stepMs = step * 1000;
    const stats = await store.guardTrims(id, { ...range, stepMs });
    const body: GuardTrimsResponse = {
      hookId: id,
      from: formatRfc3339(range.fromMs),
      to: formatRfc3339(range.toMs),
      step,
      trims: stats.trims,
      largest: stats.largest === null ? null : { field: stats.largest.field, sentChars: stats.largest.sentChars, keptChars: stats.largest.keptChars, time: formatRfc3339(stats.largest.timeMs) },
      buckets: stats.buckets.map((b) => ({ start: formatRfc3339(bucketStart(range, b.startMs)), end: formatRfc3339(bucketEnd(range, b.startMs, stepMs, at)), trims: b.trims, maxSentChars: b.maxSentChars, maxKeptChars: b.maxKeptChars })),
    };
    res.json(body);
  });
  // Errors (a bad parameter: 400; the store away: 503) get the API's answer from the handler the service puts
  // after every router (api/index.ts apiErrorHandler).
  return router;
}
