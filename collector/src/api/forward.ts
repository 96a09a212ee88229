/**
 * GET /api/v1/forwarding: queue depth, oldest age, retries and dead letters of the forwarding destination, so an
 * operator sees a downstream outage (and how close the queue is to refusing data) before anyone loses telemetry.
 * POST /api/v1/forwarding/dead-letters/replay puts the dead letters back in the queue once the cause is fixed.
 */
import express, { type Router } from 'express';
import type { DeadLetterInfo, ForwardingDestination, ForwardingResponse, ReplayResponse } from '../../../shared/src/api.ts';
import type { Forwarding } from '../forward/index.ts';
import { onlyParams, parseCount } from './params.ts';
import { formatRfc3339, formatRfc3339OrNull } from '../rfc3339.ts';

export interface ForwardingApiOptions {
  /** Undefined in fan-out mode. */
  forwarding: Forwarding | undefined;
}

/** The forwarding status route. */
export function createForwardingRouter(opts: ForwardingApiOptions): Router {
  const router = express.Router();
  router.get('/api/v1/forwarding', (req, res) => {
    const q = req.query as Record<string, unknown>;
    onlyParams(q, ['deadLetters']);
    const limit = parseCount(q, 'deadLetters', 0, 1000, 20);
    const f = opts.forwarding;
    if (!f) {
      const body: ForwardingResponse = { mode: 'fan-out', destinations: [], deadLetters: [] };
      res.json(body);
      return;
    }
    const s = f.status();
    const destination: ForwardingDestination = {
      destination: s.destination,
      state: s.state,
      depth: s.depth,
      bytes: s.bytes,
      maxBytes: s.maxBytes,
      oldestAgeMs: s.oldestAgeMs,
      delivered: s.delivered,
      retries: s.retries,
      deadLetters: s.deadLetters,
      refusedFull: s.refusedFull,
      rejectedByDestination: s.rejectedByDestination,
      consecutiveFailures: s.consecutiveFailures,
      lastError: s.lastError,
      lastSuccessAt: formatRfc3339OrNull(s.lastSuccessAtMs),
      nextAttemptAt: formatRfc3339OrNull(s.nextAttemptAtMs),
      attemptStartedAt: formatRfc3339OrNull(s.attemptStartedAtMs),
    };
    const deadLetters: DeadLetterInfo[] = f.deadLetters(limit).map((d) => ({
      id: d.id,
      signal: d.signal,
      bytes: d.bytes,
      receivedAt: formatRfc3339(d.receivedAtMs),
      failedAt: formatRfc3339(d.failedAtMs),
      attempts: d.attempts,
      status: d.status,
      reason: d.reason,
    }));
    const sum = f.deadLetterSummary();
    const counters = f.queue.counters();
    const body: ForwardingResponse = {
      mode: 'inline',
      destinations: [destination],
      deadLetters,
      deadLetterSummary: { count: sum.count, bytes: sum.bytes, maxBytes: sum.maxBytes, oldestFailedAt: formatRfc3339OrNull(sum.oldestFailedAtMs), lastReason: sum.lastReason, evicted: counters.deadLettersEvicted, expired: counters.expired, replayed: counters.replayed },
    };
    res.json(body);
  });
  // Behind http.auth and the cross-site write check, like every /api route.
  router.post('/api/v1/forwarding/dead-letters/replay', async (req, res) => {
    onlyParams(req.query as Record<string, unknown>, []);
    const f = opts.forwarding;
    if (!f) {
      res.status(409).json({ error: { code: 'not_forwarding', message: 'forwarding is off (fan-out mode: forward.endpoint is empty), so there are no dead letters to replay' } });
      return;
    }
    const body: ReplayResponse = await f.replayDeadLetters();
    res.json(body);
  });
  return router;
}
