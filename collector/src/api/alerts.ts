/**
 * /api/v1/alerts, /api/v1/silences and /api/v1/receivers/:name/test. Thin: validate, ask alerting's read model
 * or its silences, shape JSON (shapes from shared/src/api.ts). Never returns a receiver's URL, headers or
 * signing secret.
 */
import { randomUUID } from 'node:crypto';
import express, { type RequestHandler, type Response, type Router } from 'express';
import { SILENCE_STATES, type AlertDetailResponse, type AlertsResponse, type AlertState, type SilencesResponse, type SilenceState } from '../../../shared/src/api.ts';
import type { AlertReadModel } from '../alerting/read-model.ts';
import { parseSilence, silenceWarnings, type AlertLabelNames } from '../alerting/silences.ts';
import { MAX_SILENCES, SilenceLimitError, type SilencePosition, type Silences } from '../alerting/silencing.ts';
import { MAX_TEST_SENDS, type Dispatcher } from '../notify/dispatcher.ts';
import { DecodeError } from '../otlp/model.ts';
import { TooLargeError, UnsupportedMediaTypeError } from '../pipeline/errors.ts';
import { ClientAbortedError, readBody, type BodyCoding } from '../receiver/otlp-http/body.ts';
import { InflightBudget } from '../receiver/inflight.ts';
import { BadBodyError, echoed } from '../request-error.ts';
import { badCursor, HOOK_ID, onlyParams, ParamError, parseLimit, single } from './params.ts';
import { formatRfc3339 } from '../rfc3339.ts';

export interface AlertsApiOptions {
  /** The alerts as alerting serves them (refreshed from shared state before each answer). */
  alerts: AlertReadModel;
  silences: Silences;
  dispatcher: Dispatcher;
  now?: () => number;
  /**
   * The label names alerts can carry with the rules configured now, and the external labels: a silence naming
   * another is answered with warnings. None: no warnings.
   */
  alertLabels?: () => AlertLabelNames;
  /** Tells the other replicas that silences changed (the leader re-reads them and notifies at once). */
  onSilencesChanged?: () => void;
}

const ALERT_ID = /^[0-9a-f]{16}-[0-9a-z]{1,12}$/;
const SILENCE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const STATES: readonly AlertState[] = ['pending', 'firing', 'resolved'];

/**
 * The `:id` of a path in the case hookwatch writes ids, lower: an alert id is hex and base 36, a silence id a UUID,
 * and each reads the same in either case (RFC 9562 for UUIDs), so an id a client upper-cased names the same one.
 */
function pathId(params: Record<string, string | undefined>): string {
  return String(params['id']).toLowerCase();
}

function notFound(res: Response, message: string): void {
  res.status(404).json({ error: { code: 'not_found', message } });
}

function badParameter(res: Response, parameter: string, message: string): void {
  res.status(400).json({ error: { code: 'bad_parameter', message, parameter } });
}

/** `state`: silence states separated by commas (as Alertmanager names them); undefined when absent (every state). */
function parseSilenceStates(q: Record<string, unknown>): Set<SilenceState> | undefined {
  const v = single(q, 'state');
  if (v === undefined) return undefined;
  const states = v.split(',');
  for (const s of states) {
    if (!SILENCE_STATES.includes(s as SilenceState)) {
      throw new ParamError('state', `state: ${echoed(s)} is not a silence state; state lists one or more of ${SILENCE_STATES.join(', ')}, separated by commas`);
    }
  }
  return new Set(states as SilenceState[]);
}

/** A silences page's nextCursor: where it ended (the last silence's creation time and id), opaque to clients. */
function silenceCursor(p: SilencePosition): string {
  return Buffer.from(`${p.createdAtMs}:${p.id}`).toString('base64url');
}

/** `cursor`: a nextCursor silenceCursor gave; undefined when absent (the first page). */
function parseSilenceCursor(q: Record<string, unknown>): SilencePosition | undefined {
  const v = single(q, 'cursor');
  if (v === undefined) return undefined;
  const m = /^(\d{1,15}):([0-9a-f-]{36})$/.exec(v.length <= 128 ? Buffer.from(v, 'base64url').toString('latin1') : '');
  if (!m) throw badCursor();
  return { createdAtMs: Number(m[1]), id: String(m[2]) };
}

/** The most a silence's body may hold, as sent and once inflated. */
const JSON_BODY_LIMIT = 64 * 1024;

/** The Content-Encodings a silence may be sent in (Express's JSON parser took these). */
const SILENCE_CODINGS: readonly BodyCoding[] = ['gzip', 'deflate', 'br', 'zstd'];

/**
 * Silence bodies are bounded one by one (JSON_BODY_LIMIT), not by a budget they share with other requests: the
 * account readBody asks for is drawn from one without limit.
 */
const SILENCE_BODIES = new InflightBudget(Number.POSITIVE_INFINITY);

/** A refusal as express.json made it (an http-error with a `type`, meant for the client), which apiErrorHandler answers. */
function refusal(status: number, type: string, message: string, extra: Record<string, unknown> = {}): Error {
  return Object.assign(new Error(message), { type, status, statusCode: status, expose: true, ...extra });
}

/** A body over JSON_BODY_LIMIT: 413 "body larger than 64 KiB". */
function tooLarge(): Error {
  return refusal(413, 'entity.too.large', 'request entity too large', { limit: JSON_BODY_LIMIT });
}

/** The charset a JSON body is sent in (RFC 8259: UTF-8; a `utf-*` label the platform decodes is taken too). */
function jsonDecoder(contentType: string | undefined): TextDecoder | Error {
  const label = /;\s*charset\s*=\s*"?([^";\s]*)"?/i.exec(contentType ?? '')?.[1]?.toLowerCase() ?? 'utf-8';
  const unsupported = refusal(415, 'charset.unsupported', `unsupported charset ${JSON.stringify(label.toUpperCase())}`);
  if (!label.startsWith('utf-')) return unsupported;
  try {
    return new TextDecoder(label);
  } catch {
    return unsupported;
  }
}

/**
 * A JSON body parsed as express.json parses it: an empty body is `{}`, and only an object or an array is taken
 * (undefined: not valid JSON).
 */
function parseJsonBody(text: string): unknown {
  if (text.length === 0) return {};
  const first = /^[ \t\n\r]*(.|$)/s.exec(text)?.[1];
  if (first !== '{' && first !== '[') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

export function createAlertsRouter(opts: AlertsApiOptions): Router {
  const { alerts: view, silences, dispatcher } = opts;
  const now = opts.now ?? Date.now;
  const router = express.Router();
  // JSON only: a content type a cross-site form or text/plain request cannot send without a preflight; the route
  // answers any other 415, its body never read. The body is refused as soon as its Content-Length, or what arrived
  // of it as sent or once inflated, passes 64 KiB, never at its end (a chunked body without one would hold the
  // connection until http.requestTimeout); the connection then closes (net/unread-body.ts).
  const json: RequestHandler = (req, res, next) => {
    const hasBody = req.headers['transfer-encoding'] !== undefined || req.headers['content-length'] !== undefined;
    if (!hasBody || !req.is('application/json')) {
      next();
      return;
    }
    const decoder = jsonDecoder(req.headers['content-type']);
    if (decoder instanceof Error) {
      next(decoder);
      return;
    }
    const read = async (): Promise<unknown> => {
      const account = SILENCE_BODIES.open();
      try {
        const parsed = parseJsonBody(decoder.decode(await readBody(req, JSON_BODY_LIMIT, account, undefined, SILENCE_CODINGS)));
        if (parsed === undefined) throw new BadBodyError('body is not valid JSON');
        return parsed;
      } finally {
        account.release();
      }
    };
    read().then((body) => {
      req.body = body;
      next();
    }, (err: unknown) => {
      const encoding = String(req.headers['content-encoding']);
      // Bytes that do not decompress as their Content-Encoding says (gzip, deflate, br, zstd) are the client's
      // mistake, answered 400 naming the encoding, not a 500.
      next(err instanceof TooLargeError ? tooLarge()
        : err instanceof UnsupportedMediaTypeError ? refusal(415, 'encoding.unsupported', `unsupported content encoding ${JSON.stringify(encoding.trim().toLowerCase().slice(0, 32))}`)
          : err instanceof DecodeError ? new BadBodyError(`body does not decode as Content-Encoding ${JSON.stringify(encoding.slice(0, 32))}`)
            : err instanceof ClientAbortedError ? new BadBodyError('request aborted')
              : err);
    });
  };

  router.get('/api/v1/alerts', async (req, res) => {
    const q = req.query as Record<string, unknown>;
    onlyParams(q, ['state', 'hook']);
    const state = single(q, 'state');
    if (state !== undefined && !STATES.includes(state as AlertState)) {
      badParameter(res, 'state', `state must be one of ${STATES.join(', ')}`);
      return;
    }
    // One hook's alerts (the dashboard's alerts page filtered to a hook), by the id the hooks API gives it.
    const hook = single(q, 'hook');
    if (hook !== undefined && !HOOK_ID.test(hook)) {
      badParameter(res, 'hook', 'hook must be a hook id, 16 lowercase hex characters (see GET /api/v1/hooks)');
      return;
    }
    await view.refresh();
    // Counted with the list, before it awaits anything: the two describe the same alerts.
    const resolvedOmitted = state === undefined || state === 'resolved' ? view.resolvedNotListed(hook) : 0;
    // Only the state asked for is looked up: the dashboard asks for the firing alerts at each refresh.
    const alerts = await view.alertsWithDeliveries(state as AlertState | undefined, hook);
    const body: AlertsResponse = { alerts, resolvedOmitted, receivers: view.receiverNames(), now: formatRfc3339(now()) };
    res.json(body);
  });

  router.get('/api/v1/alerts/:id', async (req, res) => {
    onlyParams(req.query as Record<string, unknown>, []);
    const id = pathId(req.params);
    if (!ALERT_ID.test(id)) {
      badParameter(res, 'id', 'alert id must look like <16 hex>-<base36>, as listed by GET /api/v1/alerts');
      return;
    }
    await view.refresh();
    const alert = view.alert(id);
    if (!alert) {
      notFound(res, `no active or recently resolved alert with id ${id}`);
      return;
    }
    const body: AlertDetailResponse = { alert, attempts: await view.attempts(id) };
    res.json(body);
  });

  router.get('/api/v1/silences', async (req, res) => {
    const q = req.query as Record<string, unknown>;
    onlyParams(q, ['state', 'limit', 'cursor']);
    const states = parseSilenceStates(q);
    // Expired silences are kept for the resolved-retention period and may be many: an answer holds one page.
    // The default page holds every silence that may be in force at once (MAX_SILENCES).
    const limit = parseLimit(q, MAX_SILENCES, MAX_SILENCES);
    const after = parseSilenceCursor(q);
    await view.refresh();
    // The next page starts after the last silence of this one, wherever silences created or expired since put it.
    const page = silences.page(states, limit, after);
    const body: SilencesResponse = { silences: page.silences, total: page.total, nextCursor: page.next === null ? null : silenceCursor(page.next) };
    res.json(body);
  });

  router.post('/api/v1/silences', json, async (req, res) => {
    onlyParams(req.query as Record<string, unknown>, []);
    if (!req.is('application/json')) {
      res.status(415).json({ error: { code: 'unsupported_media_type', message: 'send the silence as Content-Type: application/json' } });
      return;
    }
    const parsed = parseSilence(req.body, now());
    // Created on other replicas too: counted against the limit with the shared store's.
    await view.refresh();
    let silence;
    try {
      silence = await silences.add(parsed);
    } catch (err) {
      if (!(err instanceof SilenceLimitError)) throw err;
      res.status(400).json({ error: { code: 'too_many_silences', message: err.message } });
      return;
    }
    opts.onSilencesChanged?.();
    const warnings = opts.alertLabels ? silenceWarnings(silence.matchers, opts.alertLabels()) : [];
    res.status(201).json({ silence, ...(warnings.length > 0 ? { warnings } : {}) });
  });

  router.delete('/api/v1/silences/:id', async (req, res) => {
    onlyParams(req.query as Record<string, unknown>, []);
    const id = pathId(req.params);
    if (!SILENCE_ID.test(id)) {
      badParameter(res, 'id', 'silence id must be a UUID (8-4-4-4-12 hex digits), as returned by POST /api/v1/silences');
      return;
    }
    // Created on another replica: read it from the shared store first.
    await view.refresh();
    const silence = await silences.expire(id);
    if (!silence) {
      notFound(res, `no silence with id ${id}`);
      return;
    }
    opts.onSilencesChanged?.();
    res.json({ silence });
  });

  router.post('/api/v1/receivers/:name/test', async (req, res) => {
    onlyParams(req.query as Record<string, unknown>, []);
    const name = String(req.params['name']);
    if (!dispatcher.receiverNames().includes(name)) {
      notFound(res, `no receiver named ${echoed(name)}; configured: ${dispatcher.receiverNames().join(', ') || '(none)'}`);
      return;
    }
    const t = now();
    const webhookId = `msg_test_${randomUUID()}`;
    const result = await dispatcher.sendTest({
      webhookId,
      receiver: name,
      status: 'firing',
      createdAtMs: t,
      test: true,
      alert: {
        id: `0000000000000000-${t.toString(36)}`,
        fingerprint: '0000000000000000',
        rule: 'hookwatch_test',
        labels: { alertname: 'hookwatch_test', severity: 'info' },
        annotations: { summary: 'Test notification from hookwatch: this receiver is reachable.', description: 'Sent by POST /api/v1/receivers/:name/test; no hook is affected.' },
        startsAt: formatRfc3339(t),
        endsAt: null,
        hookId: null,
      },
    });
    if (result.outcome === 'busy') {
      // Refused rather than joined to the running one: that one's answer is about a notification this request did
      // not send (another webhook-id), and waiting callers would hold connections open without bound.
      const seconds = Math.max(1, Math.ceil(result.retryAfterMs / 1000));
      const message = result.scope === 'receiver'
        ? `a test notification to receiver ${echoed(name)} is already running; it ends within ${seconds} s (the receiver's timeout)`
        : `${MAX_TEST_SENDS} test notifications are already running, the most at once; receiver ${echoed(name)} can be tested once one ends, within ${seconds} s`;
      res.status(429).set('retry-after', String(seconds)).json({ error: { code: result.scope === 'receiver' ? 'test_running' : 'too_many_tests', message, receiver: name } });
      return;
    }
    const delivered = result.outcome === 'delivered';
    res.status(delivered ? 200 : 502).json({ receiver: name, webhookId, delivered, httpStatus: result.httpStatus, error: result.error });
  });

  // Errors (a bad parameter or body: 400; the state store away: 503) get the API's answer from the handler the
  // service puts after every router (api/index.ts apiErrorHandler).
  return router;
}
