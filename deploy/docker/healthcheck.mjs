// Container health check: GET /healthz on the port HOOKWATCH_HTTP_ADDR names (default 9318); exit 0 when healthy.
// Plain JavaScript with Node's http and https, because the slim base image has no curl or wget.
//
// With TLS on that port (http.tls.*) it asks over https: at once when HOOKWATCH_HTTP_TLS_CERT_FILE is set, else
// after plain HTTP was answered 400 (a TLS port's answer to a plain-HTTP request; /healthz never answers 400) or
// hung up on (TLS set in the config file). This checks its own process on loopback, so the
// certificate, which names the service rather than 127.0.0.1, is not verified. Under mutual TLS the check has no
// client certificate: a handshake the server completes and then refuses for want of one still shows that the
// process answers, which is what /healthz says.
//
// `healthcheck.mjs /readyz` asks /readyz instead (the Kubernetes readiness probe, an exec probe: an httpGet probe
// cannot read a Secret), with the credentials of http.auth.mode from the environment the pod sets from its Secret:
// HOOKWATCH_HTTP_AUTH_TOKEN (bearer), else HOOKWATCH_HTTP_AUTH_USERNAME and HOOKWATCH_HTTP_AUTH_PASSWORD (basic).
import { get as httpGet } from 'node:http';
import { get as httpsGet } from 'node:https';
import { Buffer } from 'node:buffer';

const addr = process.env.HOOKWATCH_HTTP_ADDR ?? '';
const port = Number(/:(\d+)$/.exec(addr)?.[1] ?? '9318');
const TIMEOUT_MS = 4000;
const path = process.argv[2] === '/readyz' ? '/readyz' : '/healthz';
const env = process.env;
const authorization = env.HOOKWATCH_HTTP_AUTH_TOKEN
  ? `Bearer ${env.HOOKWATCH_HTTP_AUTH_TOKEN}`
  : env.HOOKWATCH_HTTP_AUTH_USERNAME && env.HOOKWATCH_HTTP_AUTH_PASSWORD
    ? `Basic ${Buffer.from(`${env.HOOKWATCH_HTTP_AUTH_USERNAME}:${env.HOOKWATCH_HTTP_AUTH_PASSWORD}`).toString('base64')}`
    : undefined;

/** The status of GET /healthz (or /readyz) with `get` (http or https), or the error. */
function ask(get, options = {}) {
  return new Promise((resolve, reject) => {
    const req = get({ host: '127.0.0.1', port, path, headers: path === '/readyz' && authorization ? { authorization } : {}, timeout: TIMEOUT_MS, ...options }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })));
    req.on('error', reject);
  });
}

async function overHttps() {
  try {
    const status = await ask(httpsGet, { rejectUnauthorized: false });
    return status >= 200 && status < 300;
  } catch (err) {
    return err?.code === 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED';
  }
}

async function healthy() {
  if (process.env.HOOKWATCH_HTTP_TLS_CERT_FILE) return overHttps();
  try {
    const status = await ask(httpGet);
    if (status === 400) return overHttps();
    return status >= 200 && status < 300;
  } catch (err) {
    // Nothing listens, or nothing answers: unhealthy. A TLS port answers plain HTTP 400 (above), or hangs up on it.
    if (err?.code === 'ECONNREFUSED' || err?.code === 'ETIMEDOUT') return false;
    return overHttps();
  }
}

process.exit((await healthy()) ? 0 : 1);
