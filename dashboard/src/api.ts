/** The dashboard's typed client for /api/v1: one place that turns HTTP failures into messages a person can act on. */
import type {
  AlertDetailResponse, AlertsResponse, BreakdownResponse, FleetSeriesResponse, HooksResponse, OverviewResponse, SeriesResponse, Silence, SilenceMatcher, SilencesResponse,
} from '../../shared/src/api.ts';
import type { ApiError, ClusterResponse, ForwardingResponse, HookSummary, ReplayResponse } from '../../shared/src/api.ts';

/**
 * A failed API call: the HTTP status (0 when the server could not be reached) and the API's own message.
 * `signedOut`: the credentials are gone (401, or a sign-in proxy redirecting to its login page); asking again
 * will not help until the page is loaded again.
 */
export class ApiFailure extends Error {
  override name = 'ApiFailure';
  status: number;
  signedOut: boolean;
  constructor(status: number, message: string, signedOut = false) {
    super(message);
    this.status = status;
    this.signedOut = signedOut;
  }
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
  if (res.type === 'opaqueredirect') {
    throw new ApiFailure(res.status, 'the sign-in session has expired (the server redirected to a login page); reload the page to sign in', true);
  }
  if (res.status === 401) throw new ApiFailure(401, 'hookwatch asks for credentials again; reload the page to sign in', true);
  if (res.status === 204) return undefined as T;
  let text: string;
  try {
    text = await res.text();
  } catch (err) {
    // The connection went in the middle of the answer (a restart, a network dropped): no answer came, whole.
    throw notAnswered(err);
  }
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    throw new ApiFailure(res.status, `${method} ${path} answered ${res.status} with a body that is not JSON`);
  }
  if (!res.ok) {
    const msg: unknown = (json as Partial<ApiError> | undefined)?.error?.message;
    throw new ApiFailure(res.status, typeof msg === 'string' ? msg : `${method} ${path} answered ${res.status}`);
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
    call<Silence | { silence: Silence } | { silenceId: string }>('POST', '/api/v1/silences', undefined, body),
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
