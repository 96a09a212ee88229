// Container health check: GET /healthz on the port HOOKWATCH_HTTP_ADDR names (default 9318); exit 0 when healthy.
// Plain JavaScript with Node's fetch, because the slim base image has no curl or wget.
/* global AbortSignal */
const addr = process.env.HOOKWATCH_HTTP_ADDR ?? '';
const port = /:(\d+)$/.exec(addr)?.[1] ?? '9318';
const url = `http://127.0.0.1:${port}/healthz`;
try {
  const res = await fetch(url, { signal: AbortSignal.timeout(4000) });
  process.exit(res.ok ? 0 : 1);
} catch {
  process.exit(1);
}
