/** The dashboard's typed client for /api/v1: one place that turns HTTP failures into messages a person can act on. */
import type {
  AlertDetailResponse, AlertsResponse, BreakdownResponse, FleetSeriesResponse, HooksResponse, OverviewResponse, SeriesResponse, Silence, SilenceCreatedResponse, SilenceMatcher, SilencesResponse,
} from '../../shared/src/api.ts';
import type { ApiError, ClusterResponse, ForwardingResponse, HookSummary, ReplayResponse } from '../../shared/src/api.ts';
import { OWN_ANSWER_HEADER } from '../../shared/src/api.ts';
import { parseRetryAfter } from '../../shared/src/retry-after.ts';
import type { GuardTrimsResponse } from '../../shared/src/guard-trims.ts';
import type { TranscriptCommandsResponse } from '../../shared/src/transcript-api.ts';

/**
 * Who asks for the page to sign in again: hookwatch itself (its own 401), or a sign-in proxy in front of it
 * (oauth2-proxy, Pomerium, Cloudflare Access, an ingress with auth-url) whose session ended, which a page loaded
 * again is sent through to sign in.
 */
export type SignIn = 'hookwatch' | 'proxy';

/**
 * A failed API call: the HTTP status (0 when the server could not be reached) and the API's own message.
 * `signedOut`: the credentials are gone (a 401, or a sign-in proxy answering for hookwatch); asking again will not
 * help until the page is loaded again. `signIn`: who asks for it (undefined when not signed out).
 */
export class ApiFailure extends Error {
  override name = 'ApiFailure';
  status: number;
  signedOut: boolean;
  signIn: SignIn | undefined;
  /** Answered with a body that is not JSON (a gateway's or proxy's page in hookwatch's place), not hookwatch's own. */
  notJson = false;
  /** Answered in hookwatch's own JSON (hookwatchJson: its mark), not a gateway's or proxy's in its place. */
  own = false;
  /** The request parameter hookwatch refused (a 400's `error.parameter`), when it named one. */
  parameter: string | undefined;
  /** How long a 503 or 429 asked to wait before the next try (its Retry-After, in ms), when it said. */
  retryAfterMs: number | undefined;
  constructor(status: number, message: string, signIn?: SignIn) {
    super(message);
    this.status = status;
    this.signedOut = signIn !== undefined;
    this.signIn = signIn;
  }
}

/** What the answer's Content-Type says it is. */
function kindOf(res: Response): 'json' | 'page' | 'other' {
  const type = res.headers.get('content-type') ?? '';
  if (/^\s*application\/([\w.+-]+\+)?json\b/i.test(type)) return 'json';
  return /^\s*(text\/html|application\/xhtml\+xml)\b/i.test(type) ? 'page' : 'other';
}

/**
 * Whether the answer is hookwatch's own JSON: hookwatch marks every answer (OWN_ANSWER_HEADER), which a proxy passes
 * on with it; a proxy's or a gateway's own JSON (`{"message":"Unauthorized"}`, even one shaped as hookwatch's errors)
 * has no mark.
 */
function hookwatchJson(res: Response): boolean {
  return kindOf(res) === 'json' && res.headers.has(OWN_ANSWER_HEADER);
}

/**
 * The answer of a sign-in proxy whose session ended, in place of hookwatch's: a redirect to its login page, that page
 * itself (a 2xx web page where hookwatch answers JSON), or a refusal that is not hookwatch's JSON (401, 403: a web
 * page, plain text, or JSON of its own); undefined for an answer that may be hookwatch's own, which reads as it says.
 * A 5xx page (a gateway's "502 Bad Gateway") is not one: hookwatch is away, not the sign-in. Told apart by what
 * hookwatch never does: it answers the API in JSON that carries its mark, and redirects no call of the page's.
 */
export function signInLost(res: Response): ApiFailure | undefined {
  const again = 'reload the page to sign in';
  // redirect: 'manual' leaves a redirect unfollowed, to the same origin or another: the page sees no more of it.
  if (res.type === 'opaqueredirect') return new ApiFailure(res.status, `the sign-in session has expired (the server redirected to a login page); ${again}`, 'proxy');
  const kind = kindOf(res);
  const how = kind === 'page' ? ' with a web page' : '';
  if (res.status === 401) {
    if (hookwatchJson(res)) return new ApiFailure(401, `hookwatch asks for credentials again; ${again}`, 'hookwatch');
    return new ApiFailure(401, `the sign-in session has expired (the server in front of hookwatch answered 401${how}); ${again}`, 'proxy');
  }
  if (res.status === 403 && !hookwatchJson(res)) {
    return new ApiFailure(403, `the server in front of hookwatch refused the request (403${how}): the sign-in session may have expired, or this account is not let in; ${again}`, 'proxy');
  }
  if (res.ok && kind === 'page') {
    return new ApiFailure(res.status, `the sign-in session has expired (hookwatch's address answered with a web page, most likely a login page, instead of hookwatch's data); ${again}`, 'proxy');
  }
  return undefined;
}

export type Query = Record<string, string | undefined>;

/**
 * The path with the query's parameters; one undefined is left out, one empty is sent: a filter on the empty value
 * (`team=`) matches the events without the attribute.
 */
export function withQuery(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, v);
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
}

/**
 * How long a read may go unanswered before it counts as failed: a network dropped without a word (no reset) leaves
 * a request waiting for many minutes, and the refreshes after it with it. Writes are not cut short: the server may
 * be doing what they asked.
 */
export const READ_TIMEOUT_MS = 60_000;

async function call<T>(method: string, path: string, query?: Query, body?: unknown, signal?: AbortSignal): Promise<T> {
  if (method !== 'GET') return exchange<T>(method, path, query, body, signal);
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(), READ_TIMEOUT_MS);
  try {
    return await exchange<T>(method, path, query, body, signal ? AbortSignal.any([signal, timeout.signal]) : timeout.signal);
  } catch (err) {
    if (timeout.signal.aborted && !signal?.aborted) throw new ApiFailure(0, `hookwatch did not answer within ${READ_TIMEOUT_MS / 1000} s`);
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/** A request that got no answer, or not all of one: an abort as it is, anything else as ApiFailure status 0. */
function notAnswered(err: unknown): unknown {
  if ((err as Error).name === 'AbortError') return err;
  // The browser knows when it has no network at all: that is not hookwatch's doing.
  return new ApiFailure(0, navigator.onLine ? 'hookwatch did not answer (is it running?)' : 'this browser is offline (no network connection)');
}

async function exchange<T>(method: string, path: string, query?: Query, body?: unknown, signal?: AbortSignal): Promise<T> {
  let res: Response;
  try {
    res = await fetch(withQuery(path, query), {
      method,
      // Marked as the page's own: refused under HTTP Basic, it is answered without the challenge that would hold it
      // behind the browser's sign-in prompt, so the page can say it is signed out at once.
      headers: { accept: 'application/json', 'x-requested-with': 'XMLHttpRequest', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? null : JSON.stringify(body),
      signal: signal ?? null,
      // A sign-in proxy whose session expired answers with a redirect to its login page: followed, it would be
      // refused (another origin) and read as "hookwatch did not answer".
      redirect: 'manual',
    });
  } catch (err) {
    throw notAnswered(err);
  }
  const lost = signInLost(res);
  if (lost) throw lost;
  if (res.status === 204) return undefined as T;
  let text: string;
  try {
    text = await res.text();
  } catch (err) {
    // The connection went in the middle of the answer (a restart, a network dropped): no answer came, whole.
    throw notAnswered(err);
  }
  // hookwatch busy or starting (503), or a proxy in front limiting requests (429), may say when to come back.
  const retryAfterMs = res.status === 503 || res.status === 429 ? parseRetryAfter(res.headers.get('retry-after'), Date.now()) : undefined;
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    const failure = new ApiFailure(res.status, `${method} ${path} answered ${res.status} with a body that is not JSON`);
    failure.notJson = true;
    failure.retryAfterMs = retryAfterMs;
    throw failure;
  }
  if (!res.ok) {
    const error = (json as Partial<ApiError> | undefined)?.error;
    const msg: unknown = error?.message;
    const failure = new ApiFailure(res.status, typeof msg === 'string' ? msg : `${method} ${path} answered ${res.status}`);
    failure.own = hookwatchJson(res);
    if (typeof error?.parameter === 'string') failure.parameter = error.parameter;
    failure.retryAfterMs = retryAfterMs;
    throw failure;
  }
  return json as T;
}

/** GET helpers, one per endpoint the dashboard reads. */
export const api = {
  overview: (q: Query, signal?: AbortSignal) => call<OverviewResponse>('GET', '/api/v1/overview', q, undefined, signal),
  hooks: (q: Query, signal?: AbortSignal) => call<HooksResponse>('GET', '/api/v1/hooks', q, undefined, signal),
  fleetSeries: (q: Query, signal?: AbortSignal) => call<FleetSeriesResponse>('GET', '/api/v1/fleet/series', q, undefined, signal),
  hook: (id: string, q: Query, signal?: AbortSignal) =>
    call<{ from: string; to: string; hook: HookSummary }>('GET', `/api/v1/hooks/${encodeURIComponent(id)}`, q, undefined, signal),
  series: (id: string, q: Query, signal?: AbortSignal) => call<SeriesResponse>('GET', `/api/v1/hooks/${encodeURIComponent(id)}/series`, q, undefined, signal),
  /** The hook's commands, from the transcripts sent (`hookwatch scan --send`). */
  commands: (id: string, q: Query, signal?: AbortSignal) =>
    call<TranscriptCommandsResponse>('GET', `/api/v1/hooks/${encodeURIComponent(id)}/commands`, q, undefined, signal),
  /** What `hookwatch guard` trimmed of the hook's outputs. */
  guardTrims: (id: string, q: Query, signal?: AbortSignal) =>
    call<GuardTrimsResponse>('GET', `/api/v1/hooks/${encodeURIComponent(id)}/guard-trims`, q, undefined, signal),
  breakdown: (id: string, q: Query, signal?: AbortSignal) =>
    call<BreakdownResponse>('GET', `/api/v1/hooks/${encodeURIComponent(id)}/breakdown`, q, undefined, signal),
  forwarding: (signal?: AbortSignal) => call<ForwardingResponse>('GET', '/api/v1/forwarding', undefined, undefined, signal),
  replayDeadLetters: () => call<ReplayResponse>('POST', '/api/v1/forwarding/dead-letters/replay'),
  cluster: (signal?: AbortSignal) => call<ClusterResponse>('GET', '/api/v1/cluster', undefined, undefined, signal),
  dimensions: (signal?: AbortSignal) => call<{ dimensions: string[] }>('GET', '/api/v1/dimensions', undefined, undefined, signal),
  /** The dashboard build hookwatch serves now (index.html names the one a page runs). */
  build: (signal?: AbortSignal) => call<{ build: string }>('GET', '/dashboard/build', undefined, undefined, signal),
  alerts: (q: Query, signal?: AbortSignal) => call<AlertsResponse>('GET', '/api/v1/alerts', q, undefined, signal),
  alert: (id: string, signal?: AbortSignal) => call<AlertDetailResponse>('GET', `/api/v1/alerts/${encodeURIComponent(id)}`, undefined, undefined, signal),
  createSilence: (body: { matchers: SilenceMatcher[]; startsAt?: string; endsAt: string; createdBy: string; comment: string }) =>
    call<Silence | SilenceCreatedResponse | { silenceId: string }>('POST', '/api/v1/silences', undefined, body),
  expireSilence: (id: string) => call<unknown>('DELETE', `/api/v1/silences/${encodeURIComponent(id)}`),
  /** The silences in force (active) or to come (pending), the ones the alerts page lists; not the expired ones. */
  silences: (signal?: AbortSignal) => call<SilencesResponse>('GET', '/api/v1/silences', { state: 'active,pending' }, undefined, signal),
};

/** The id of a created silence, whichever envelope the API uses. */
export function silenceIdOf(r: Silence | { silence: Silence } | { silenceId: string } | undefined): string | undefined {
  if (!r) return undefined;
  if ('silence' in r) return r.silence.id;
  if ('silenceId' in r) return r.silenceId;
  return 'id' in r ? r.id : undefined;
}

/** What the server warned of a created silence (a matcher on a label no alert carries); none from other envelopes. */
export function silenceWarningsOf(r: Silence | SilenceCreatedResponse | { silenceId: string } | undefined): string[] {
  return r && 'silence' in r && Array.isArray(r.warnings) ? r.warnings.filter((w): w is string => typeof w === 'string') : [];
}
