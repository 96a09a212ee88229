// A tiny webhook receiver for the compose stack: prints every alert notification hookwatch sends as one JSON
// line on stdout, so `docker-compose logs -f webhook-echo` shows alerts arriving.
// With WEBHOOK_SECRET (whsec_<base64>) it checks the Standard Webhooks signature and says whether it is valid:
// made with the secret, compared in constant time, over a webhook-timestamp within 5 minutes of this machine's
// clock (an older or later one is a request replayed, or held back, and is invalid however well it is signed).
// While a secret is rotated WEBHOOK_SECRET takes both, space-separated: a signature made with either is valid.
// FAIL_FIRST=n answers 503 to the first n requests, to watch hookwatch retry.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { Buffer } from 'node:buffer';
import { createServer } from 'node:http';

const port = Number(process.env.PORT ?? 8080);
const host = process.env.HOST ?? '0.0.0.0';
const secrets = (process.env.WEBHOOK_SECRET ?? '').split(' ').filter((s) => s !== '');
/** How far webhook-timestamp may be from this machine's clock, as the Standard Webhooks libraries allow. */
const TOLERANCE_SECONDS = 5 * 60;
let failFirst = Number(process.env.FAIL_FIRST ?? 0);
const MAX_BODY = 1024 * 1024;

function signatureValid(headers, body) {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = String(headers['webhook-signature'] ?? '').split(' ');
  if (!id || !timestamp) return false;
  // Unix seconds, digits only, near now: else a request recorded once could be sent again for ever.
  if (!/^\d{1,12}$/.test(timestamp) || Math.abs(Date.now() / 1000 - Number(timestamp)) > TOLERANCE_SECONDS) return false;
  return secrets.some((secret) => {
    const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
    const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
    return signatures.some((s) => {
      const [version, value] = s.split(',');
      if (version !== 'v1' || !value) return false;
      const given = Buffer.from(value, 'base64');
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
  });
}

const server = createServer((req, res) => {
  const chunks = [];
  let size = 0;
  req.on('data', (c) => {
    size += c.length;
    if (size > MAX_BODY) {
      res.writeHead(413).end();
      req.destroy();
      return;
    }
    chunks.push(c);
  });
  req.on('end', () => {
    if (res.headersSent) return;
    const text = Buffer.concat(chunks).toString('utf8');
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
    const line = {
      receivedAt: new Date().toISOString(),
      method: req.method,
      path: req.url,
      webhookId: req.headers['webhook-id'] ?? null,
      signature: secrets.length > 0 ? (signatureValid(req.headers, text) ? 'valid' : 'invalid') : 'not checked',
      status: body && typeof body === 'object' ? body.status ?? null : null,
      alerts: body && typeof body === 'object' && Array.isArray(body.alerts) ? body.alerts.map((a) => ({ status: a.status, alertname: a.labels?.alertname, hook: a.labels?.hook_name ?? a.labels?.hook })) : null,
      body,
    };
    process.stdout.write(JSON.stringify(line) + '\n');
    if (failFirst > 0) {
      failFirst--;
      res.writeHead(503, { 'retry-after': '1' }).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  });
});

server.listen(port, host, () => {
  const a = server.address();
  process.stderr.write(JSON.stringify({ msg: 'webhook-echo listening', port: a.port }) + '\n');
});
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => server.close(() => process.exit(0)));
