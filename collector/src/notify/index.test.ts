/** The notify stage against a real HTTP receiver on port 0: transport retries, bodies, signing, OTLP export. */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../telemetry/logger.ts';
import { HOOKWATCH_VERSION } from '../version.ts';
import { otlpAccepted, WebhookSink } from '../../test/support/alerting.ts';
import { parseExposition, sampleValue } from '../../test/support/prometheus-text.ts';
import { recordingLogger } from '../../test/support/recording-logger.ts';
import { MetricsRegistry } from '../telemetry/metrics.ts';
import { alertmanagerBody, alertmanagerFingerprint } from './alertmanager.ts';
import { Dispatcher } from './dispatcher.ts';
import { registerNotifyMetrics } from './metrics.ts';
import type { Notification, ReceiverConfig } from './model.ts';
import { OtlpAlertEmitter, logsUrl } from './otlp.ts';
import { parseReceivers, signingSecretProblem } from './settings.ts';
import { slackText } from './slack.ts';
import { failureReason, sendWithRetry, type AttemptResult } from './transport.ts';

const sinks: WebhookSink[] = [];
afterEach(async () => {
  for (const s of sinks.splice(0)) await s.close();
});

async function sink(): Promise<WebhookSink> {
  const s = new WebhookSink();
  await s.start();
  sinks.push(s);
  return s;
}

const SECRET = 'whsec_' + Buffer.from('0123456789abcdef0123456789abcdef').toString('base64');

function notification(over: Partial<Notification> = {}): Notification {
  return {
    webhookId: 'msg_test1',
    receiver: 'ops',
    status: 'firing',
    createdAtMs: Date.now(),
    alert: {
      id: 'aaaaaaaaaaaaaaaa-1', fingerprint: 'aaaaaaaaaaaaaaaa', rule: 'persisted', hookId: '0123456789abcdef',
      labels: { alertname: 'persisted', severity: 'critical', hook_event: 'SessionStart', hook_name: 'SessionStart:startup' },
      annotations: { summary: 'SessionStart:startup: 1 output over the 10,000-character cap saved to a file' },
      startsAt: '2026-11-30T10:00:00.000Z', endsAt: null,
    },
    ...over,
  };
}

/** Standard Webhooks verification written from the spec, independent of signing.ts. */
function verify(secret: string, headers: Record<string, string | string[] | undefined>, body: string): boolean {
  const id = String(headers['webhook-id']);
  const ts = String(headers['webhook-timestamp']);
  if (Math.abs(Date.now() / 1000 - Number(ts)) > 300) return false;
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest();
  return String(headers['webhook-signature']).split(' ').some((sig) => {
    const [version, b64] = sig.split(',');
    const got = Buffer.from(b64 ?? '', 'base64');
    return version === 'v1' && got.length === expected.length && timingSafeEqual(got, expected);
  });
}

describe('transport', () => {
  it('retries 503 and 408 until delivered, reporting every attempt', async () => {
    const s = await sink();
    s.reply = ({ index }) => ({ status: index === 0 ? 503 : index === 1 ? 408 : 200 });
    const attempts: AttemptResult[] = [];
    const r = await sendWithRetry(() => ({ body: '{}', headers: {} }), { url: s.url, timeoutMs: 2000, deadlineMs: Date.now() + 10_000, baseDelayMs: 5, onAttempt: (a) => attempts.push(a) });
    expect(r).toMatchObject({ outcome: 'delivered', attempts: 3, httpStatus: 200 });
    expect(attempts.map((a) => `${a.outcome}:${a.httpStatus}`)).toEqual(['retrying:503', 'retrying:408', 'delivered:200']);
  });

  it('builds (renders, signs) only the attempts it sends: none for one whose check before it threw', async () => {
    const s = await sink();
    const built: number[] = [];
    let checks = 0;
    const proceed = async (): Promise<boolean> => {
      if (checks++ === 0) throw new Error('Connection terminated unexpectedly');
      return true;
    };
    const r = await sendWithRetry((attempt) => (built.push(attempt), { body: '{}', headers: {} }), { url: s.url, timeoutMs: 2000, deadlineMs: Date.now() + 10_000, baseDelayMs: 5, proceed });
    expect(r).toMatchObject({ outcome: 'delivered', attempts: 2, httpStatus: 200 });
    expect([built, s.requests.length]).toEqual([[2], 1]);
  });

  it('treats 4xx other than 408/429 as permanent: one attempt', async () => {
    const s = await sink();
    s.reply = () => ({ status: 400 });
    const r = await sendWithRetry(() => ({ body: '{}', headers: {} }), { url: s.url, timeoutMs: 2000, deadlineMs: Date.now() + 10_000, baseDelayMs: 5 });
    expect(r).toMatchObject({ outcome: 'failed', attempts: 1, httpStatus: 400 });
    expect(s.requests).toHaveLength(1);
  });

  it('honours Retry-After on 429 even when the backoff would be shorter', async () => {
    const s = await sink();
    s.reply = ({ index }) => (index === 0 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 });
    const r = await sendWithRetry(() => ({ body: '{}', headers: {} }), { url: s.url, timeoutMs: 2000, deadlineMs: Date.now() + 10_000, baseDelayMs: 1 });
    expect(r.outcome).toBe('delivered');
    const gap = (s.requests[1]?.perfMs ?? 0) - (s.requests[0]?.perfMs ?? 0);
    expect(gap).toBeGreaterThanOrEqual(950);
  });

  it('treats an answer whose headers are too large to read as permanent: one attempt, counted `other`', async () => {
    const s = await sink();
    // Over the 16 KiB of headers fetch reads (a proxy setting a cookie per request, say): it would be so every time.
    s.reply = () => ({ status: 200, headers: { 'set-cookie': 'x'.repeat(20 * 1024) } });
    const r = await sendWithRetry(() => ({ body: '{}', headers: {} }), { url: s.url, timeoutMs: 2000, deadlineMs: Date.now() + 2000, baseDelayMs: 5, maxDelayMs: 20 });
    expect(r).toMatchObject({ outcome: 'failed', attempts: 1, httpStatus: null, error: "answer's headers too large to read (UND_ERR_HEADERS_OVERFLOW)" });
    expect(s.requests).toHaveLength(1);
    expect(failureReason(r)).toBe('other');
  });

  it('gives up at the deadline and says so', async () => {
    const s = await sink();
    s.reply = () => ({ status: 503 });
    const started = Date.now();
    const r = await sendWithRetry(() => ({ body: '{}', headers: {} }), { url: s.url, timeoutMs: 2000, deadlineMs: started + 1500, baseDelayMs: 20, maxDelayMs: 50 });
    expect(r.outcome).toBe('failed');
    expect(r.error).toContain('deadline');
    expect(Date.now() - started).toBeLessThan(5000);
    expect(s.requests.length).toBeGreaterThan(1);
  });

  it('times out a hanging receiver and never echoes the URL (it may hold a token) in the error', async () => {
    const s = await sink();
    s.reply = () => ({ status: 200, delayMs: 5000 });
    const url = `${s.url}/services/T000/B000/secret-token-xyz`;
    const attempts: AttemptResult[] = [];
    const r = await sendWithRetry(() => ({ body: '{}', headers: {} }), { url, timeoutMs: 200, deadlineMs: Date.now() + 100, onAttempt: (a) => attempts.push(a) });
    expect(r.outcome).toBe('failed');
    expect(attempts[0]?.error).toBe('timed out after 200 ms; gave up: the next attempt would pass the delivery deadline');
    expect(failureReason(r)).toBe('timeout');
    expect(JSON.stringify(attempts)).not.toContain('secret-token-xyz');
  });

  it('says a refused connection in words with its code and nothing of the URL, host included, counted unreachable', async () => {
    const s = await sink();
    await s.close();
    const r = await sendWithRetry(() => ({ body: '{}', headers: {} }), { url: `${s.url}/services/T000/B000/secret-token-xyz?key=k3y`, timeoutMs: 2000, deadlineMs: Date.now() + 100, maxAttempts: 1 });
    expect(r).toMatchObject({ outcome: 'failed', error: 'connection refused (ECONNREFUSED): nothing listens at that address' });
    expect(failureReason(r)).toBe('unreachable');
    // A token may sit in the host name (https://<token>.example.net): it is not said either.
    const named = await sendWithRetry(() => ({ body: '{}', headers: {} }), { url: 'http://secret-token-xyz.hookwatch-receiver.invalid/services', timeoutMs: 2000, deadlineMs: Date.now() + 100, maxAttempts: 1 });
    expect(named.error).toBe('name not found (ENOTFOUND): no address for that host name');
    expect(failureReason(named)).toBe('unreachable');
  });

  it('reads the reason of an attempt stored before its error was said in words', () => {
    const at = (error: string) => failureReason({ httpStatus: null, error });
    expect([at('ECONNREFUSED'), at('ENOTFOUND; gave up: the next attempt would pass the delivery deadline'), at('UND_ERR_SOCKET')]).toEqual(['unreachable', 'unreachable', 'unreachable']);
    expect([at('timed out'), at('timed out; gave up: the next attempt would pass the delivery deadline'), at('UND_ERR_HEADERS_TIMEOUT')]).toEqual(['timeout', 'timeout', 'timeout']);
    expect([at('TLS handshake failed: self-signed certificate (DEPTH_ZERO_SELF_SIGNED_CERT)'), at('UND_ERR_HEADERS_OVERFLOW')]).toEqual(['tls', 'other']);
    // And one said in words.
    expect([at('connection refused (ECONNREFUSED): nothing listens at 10.0.0.7:443; gave up: the next attempt would pass the delivery deadline'), at('timed out after 10 s: no answer from 10.0.0.7:443')]).toEqual(['unreachable', 'timeout']);
  });

  it('counts a connection that timed out (ETIMEDOUT) as a timeout, in words or stored bare', () => {
    const at = (error: string) => failureReason({ httpStatus: null, error });
    expect([
      at('connection timed out (ETIMEDOUT): no answer from that address'),
      at('connection timed out (ETIMEDOUT): no answer from 10.0.0.7:443; gave up: the next attempt would pass the delivery deadline'),
      at('ETIMEDOUT'),
    ]).toEqual(['timeout', 'timeout', 'timeout']);
  });

  it('does not follow redirects: a signed body stays with its receiver', async () => {
    const s = await sink();
    s.reply = () => ({ status: 307, headers: { location: 'http://127.0.0.1:9/elsewhere' } });
    const r = await sendWithRetry(() => ({ body: '{}', headers: {} }), { url: s.url, timeoutMs: 2000, deadlineMs: Date.now() + 1000 });
    expect(r).toMatchObject({ outcome: 'failed', httpStatus: 307, attempts: 1 });
  });
});

describe('transport: an answer body that does not end', () => {
  let server: Server | undefined;
  afterEach(() => {
    server?.closeAllConnections();
    server?.close();
  });

  it('is read only so far: the attempt ends with its status, not at its timeout, holding none of it', async () => {
    // A 2xx whose body streams on (a URL that is a download, or an event stream): 1 MiB chunks for as long as the
    // client reads them.
    const chunk = Buffer.alloc(1 << 20, 'x');
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        const pump = (): void => {
          while (!res.destroyed && res.write(chunk));
        };
        res.on('drain', pump);
        pump();
      });
    });
    await deliveredBeforeTimeout();
  });

  it('is not waited for once it stops coming: the attempt ends with its status, not at its timeout', async () => {
    // A receiver that answers 200, sends a little of its body and goes quiet without ending it.
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('accepted, ');
      });
    });
    await deliveredBeforeTimeout();
  });

  /** One notification to `server`: delivered, its attempt over well before its 5 s timeout. */
  async function deliveredBeforeTimeout(): Promise<void> {
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server?.address() as AddressInfo).port}/hook`;
    const attempts: AttemptResult[] = [];
    const r = await sendWithRetry(() => ({ body: '{}', headers: {} }), { url, timeoutMs: 5000, deadlineMs: Date.now() + 10_000, onAttempt: (a) => attempts.push(a) });
    expect(r).toMatchObject({ outcome: 'delivered', attempts: 1, httpStatus: 200 });
    expect(attempts[0]?.durationMs).toBeLessThan(2500);
  }
});

describe('dispatcher', () => {
  const receiver = (url: string, over: Partial<ReceiverConfig> = {}): ReceiverConfig => ({ name: 'ops', type: 'webhook', url, headers: { 'X-Team': 'platform' }, signingSecret: SECRET, timeoutMs: 2000, sendResolved: true, ...over });

  it('signs every attempt (independently verified), keeps one webhook-id across retries, delivers once', async () => {
    const s = await sink();
    s.reply = ({ index }) => ({ status: index < 3 ? 503 : 200 });
    const attempts: AttemptResult[] = [];
    const finished: string[] = [];
    const d = new Dispatcher({ receivers: [receiver(s.url)], links: { externalUrl: 'http://hw.test' }, logger: silentLogger, deadlineMs: 30_000, maxQueue: 10, baseDelayMs: 5, maxDelayMs: 20, onAttempt: (_n, a) => void attempts.push(a), onFinished: (_n, o) => void finished.push(o) });
    expect(d.enqueue(notification())).toBe(true);
    await d.idle();
    expect(s.requests).toHaveLength(4);
    expect(s.delivered()).toHaveLength(1);
    for (const r of s.requests) {
      expect(r.headers['webhook-id']).toBe('msg_test1');
      expect(r.headers['x-team']).toBe('platform');
      // As Alertmanager sends `Alertmanager/<version>`: a receiver's logs tell the sender's release.
      expect(r.headers['user-agent']).toBe(`hookwatch/${HOOKWATCH_VERSION}`);
      expect(verify(SECRET, r.headers, r.body)).toBe(true);
      expect(verify('whsec_' + Buffer.from('another key, 32 bytes long......').toString('base64'), r.headers, r.body)).toBe(false);
    }
    expect(attempts.map((a) => a.outcome)).toEqual(['retrying', 'retrying', 'retrying', 'delivered']);
    expect(finished).toEqual(['delivered']);
    await d.stop();
  });

  it('sends the User-Agent a receiver\'s headers give in place of its own, not joined to it', async () => {
    const s = await sink();
    const d = new Dispatcher({ receivers: [receiver(s.url, { headers: { 'User-Agent': 'ops-relay/2' } })], links: { externalUrl: 'http://hw.test' }, logger: silentLogger, deadlineMs: 30_000, maxQueue: 10, baseDelayMs: 5, maxDelayMs: 20 });
    expect(d.enqueue(notification())).toBe(true);
    await d.idle();
    expect(s.requests.map((r) => r.headers['user-agent'])).toEqual(['ops-relay/2']);
    await d.stop();
  });

  it('fenced by the lease: stops before the next attempt once the token moved, never finishes what it no longer owns', async () => {
    const s = await sink();
    s.reply = () => ({ status: 503 });
    let token: number | null = 7;
    let confirmed = 0;
    const tokens: (number | null)[] = [];
    const finished: string[] = [];
    const d = new Dispatcher({
      receivers: [receiver(s.url)], links: { externalUrl: '' }, logger: silentLogger, deadlineMs: 30_000, maxQueue: 10, baseDelayMs: 20, maxDelayMs: 40,
      fence: { token: () => token, confirm: async (t) => (confirmed++, t === 7) },
      onAttempt: (_n, a, t) => {
        tokens.push(t);
        // Deposed while retrying (another replica took the lease).
        if (a.attempt === 2) token = 8;
      },
      onFinished: (_n, o) => void finished.push(o),
    });
    expect(d.enqueue(notification())).toBe(true);
    await d.idle();
    expect(s.requests).toHaveLength(2);
    expect(tokens).toEqual([7, 7]);
    expect(confirmed).toBe(2);
    expect(finished).toEqual([]);
    // Not the leader: nothing is queued; the shared outbox keeps it for the replica that leads.
    token = null;
    expect(d.enqueue(notification({ webhookId: 'msg_test2' }))).toBe(false);
    // The store says the token is stale (local clock not yet): no attempt at all.
    token = 9;
    expect(d.enqueue(notification({ webhookId: 'msg_test3' }))).toBe(true);
    await d.idle();
    expect(s.requests).toHaveLength(2);
    await d.stop();
  });

  it('fenced by the lease: a lease that ran out while the store was confirming it sends nothing', async () => {
    // Paused (SIGSTOP, a VM freeze) while the store's answer was on its way: the store confirmed the lease as it
    // stood then, but by this replica's clock it has run out since, and another replica may have taken over.
    const s = await sink();
    let token: number | null = 7;
    const d = new Dispatcher({
      receivers: [receiver(s.url)], links: { externalUrl: '' }, logger: silentLogger, deadlineMs: 30_000, maxQueue: 10,
      fence: { token: () => token, confirm: async () => ((token = null), true) },
    });
    expect(d.enqueue(notification())).toBe(true);
    await d.idle();
    expect(s.requests).toHaveLength(0);
    await d.stop();
  });

  it('fenced by the lease: a store that cannot confirm it (a database restart) fails that attempt, retried with the backoff', async () => {
    // The store's `no` stops a delivery; no answer at all says nothing of the lease, which renews on its own
    // connection: left aborted, the notification (a resolution, sent once) would wait for the next leadership.
    const s = await sink();
    const { logger, lines } = recordingLogger();
    let confirms = 0;
    const attempts: AttemptResult[] = [];
    const finished: string[] = [];
    const d = new Dispatcher({
      receivers: [receiver(s.url)], links: { externalUrl: '' }, logger, deadlineMs: 30_000, maxQueue: 10, baseDelayMs: 5, maxDelayMs: 10,
      fence: { token: () => 7, confirm: async () => { if (confirms++ === 0) throw new Error('Connection terminated unexpectedly'); return true; } },
      onAttempt: (_n, a) => void attempts.push(a), onFinished: (_n, o) => void finished.push(o),
    });
    expect(d.enqueue(notification({ status: 'resolved' }))).toBe(true);
    await d.idle();
    expect(s.delivered().map((r) => r.headers['webhook-id'])).toEqual(['msg_test1']);
    expect(confirms).toBe(2);
    expect(attempts).toMatchObject([
      { attempt: 1, outcome: 'retrying', httpStatus: null, error: 'not sent: the shared store did not answer whether this replica still leads: Connection terminated unexpectedly' },
      { attempt: 2, outcome: 'delivered', httpStatus: 200 },
    ]);
    expect(finished).toEqual(['delivered']);
    expect(d.stats).toMatchObject({ delivered: 1, failed: 0, attempts: 2 });
    // The attempt's error says why; a blip is not logged for every attempt of every notification.
    expect(lines.filter((l) => l.level === 'warn').map((l) => l.msg)).toEqual([]);
    await d.stop();
  });

  it('fenced by the lease: a store that never answers is retried until the deadline, then the notification is given up on, counted `other`', async () => {
    const s = await sink();
    const attempts: AttemptResult[] = [];
    const finished: string[] = [];
    const d = new Dispatcher({
      receivers: [receiver(s.url)], links: { externalUrl: '' }, logger: silentLogger, deadlineMs: 150, maxQueue: 10, baseDelayMs: 5, maxDelayMs: 20,
      fence: { token: () => 7, confirm: async () => { throw new Error('connect ECONNREFUSED 127.0.0.1:5432'); } },
      onAttempt: (_n, a) => void attempts.push(a), onFinished: (_n, o) => void finished.push(o),
    });
    expect(d.enqueue(notification())).toBe(true);
    await d.idle();
    expect(s.requests).toHaveLength(0);
    expect(attempts.length).toBeGreaterThan(1);
    expect(attempts.slice(0, -1).every((a) => a.outcome === 'retrying')).toBe(true);
    expect(attempts.at(-1)).toMatchObject({ outcome: 'failed', httpStatus: null, error: 'not sent: the shared store did not answer whether this replica still leads: connect ECONNREFUSED 127.0.0.1:5432; gave up: the next attempt would pass the delivery deadline' });
    expect(finished).toEqual(['failed']);
    expect(d.stats.failedByReason.other).toBe(1);
    await d.stop();
  });

  it('a notification handed over again while it is queued or being delivered is sent once', async () => {
    // A leader that took its lease back at the same epoch resumes the outbox while the evaluation that wrote a
    // notification is still delivering it: the outbox hands out that notification a second time.
    const s = await sink();
    s.reply = () => ({ status: 200, delayMs: 100 });
    const done = new Set<string>();
    const finished: string[] = [];
    const d = new Dispatcher({
      receivers: [receiver(s.url)], links: { externalUrl: '' }, logger: silentLogger, deadlineMs: 30_000, maxQueue: 10,
      // The outbox as the shared store keeps it: the outcome is committed a little after the delivery ends.
      fence: { token: () => 7, confirm: async (_t, n) => !done.has(n.webhookId) },
      onFinished: async (n, o) => {
        await new Promise((r) => setTimeout(r, 50));
        done.add(n.webhookId);
        finished.push(o);
      },
    });
    expect(d.enqueue(notification())).toBe(true);
    while (s.requests.length === 0) await new Promise((r) => setTimeout(r, 5));
    expect(d.enqueue(notification())).toBe(true);
    await d.idle();
    // Delivered, and the copy that was handed over meanwhile is not sent again once the outcome is recorded.
    expect(d.enqueue(notification())).toBe(true);
    await d.idle();
    expect(s.requests.map((r) => r.headers['webhook-id'])).toEqual(['msg_test1']);
    expect(finished).toEqual(['delivered']);
    // The same webhook-id handed out again after a lost leadership (suspend) is the new leadership's to send.
    s.reply = () => ({ status: 200, delayMs: 5000 });
    d.enqueue(notification({ webhookId: 'msg_test4' }));
    while (s.requests.length < 2) await new Promise((r) => setTimeout(r, 5));
    d.suspend();
    s.reply = () => ({ status: 200 });
    expect(d.enqueue(notification({ webhookId: 'msg_test4' }))).toBe(true);
    await d.idle();
    // Sent again (the aborted attempt was never recorded as delivered), not refused as a copy of the aborted one.
    expect(s.requests.map((r) => r.headers['webhook-id'])).toEqual(['msg_test1', 'msg_test4', 'msg_test4']);
    expect(finished).toEqual(['delivered', 'delivered']);
    await d.stop();
  });

  it('a notification handed over again under a new lease epoch is sent under it, while its copy under the old one waits', async () => {
    // The lease moved away and back between two renewals, no loss announced (nothing suspended): the new
    // leadership resumes the outbox while the old one's copy is still queued, to be refused by the fence.
    const s = await sink();
    s.reply = ({ index }) => ({ status: 200, delayMs: index === 0 ? 200 : 0 });
    let token = 7;
    const tokens: (number | null)[] = [];
    const d = new Dispatcher({
      receivers: [receiver(s.url)], links: { externalUrl: '' }, logger: silentLogger, deadlineMs: 30_000, maxQueue: 10, concurrencyPerReceiver: 1,
      fence: { token: () => token, confirm: async (t) => t === token },
      onAttempt: (_n, _a, t) => void tokens.push(t),
    });
    d.enqueue(notification({ webhookId: 'msg_other', alert: { ...notification().alert, fingerprint: 'other' } }));
    while (s.requests.length === 0) await new Promise((r) => setTimeout(r, 5));
    expect(d.enqueue(notification())).toBe(true);
    token = 9;
    expect(d.enqueue(notification())).toBe(true);
    await d.idle();
    expect(s.requests.map((r) => r.headers['webhook-id'])).toEqual(['msg_other', 'msg_test1']);
    expect(tokens).toEqual([7, 9]);
    await d.stop();
  });

  it('suspend drops the queue and aborts deliveries in flight without finishing them', async () => {
    const s = await sink();
    s.reply = () => ({ status: 200, delayMs: 5000 });
    const finished: string[] = [];
    const d = new Dispatcher({ receivers: [receiver(s.url)], links: { externalUrl: '' }, logger: silentLogger, deadlineMs: 30_000, maxQueue: 10, concurrencyPerReceiver: 1, onFinished: (_n, o) => void finished.push(o) });
    d.enqueue(notification());
    d.enqueue(notification({ webhookId: 'msg_other', alert: { ...notification().alert, fingerprint: 'other' } }));
    while (s.requests.length === 0) await new Promise((r) => setTimeout(r, 10));
    d.suspend();
    await d.idle();
    expect(finished).toEqual([]);
    expect(s.requests).toHaveLength(1);
    // Still usable afterwards (the replica may lead again).
    s.reply = () => ({ status: 200 });
    expect(d.enqueue(notification({ webhookId: 'msg_again' }))).toBe(true);
    await d.idle();
    expect(finished).toEqual(['delivered']);
    await d.stop();
  });

  it('a hanging receiver delays only itself; a full queue refuses instead of growing', async () => {
    const slow = await sink();
    slow.reply = () => ({ status: 200, delayMs: 8000 });
    const fast = await sink();
    const d = new Dispatcher({
      receivers: [receiver(slow.url, { name: 'slow' }), receiver(fast.url, { name: 'fast' })],
      links: { externalUrl: '' }, logger: silentLogger, deadlineMs: 30_000, maxQueue: 2, concurrencyPerReceiver: 1,
    });
    const started = performance.now();
    d.enqueue(notification({ receiver: 'slow', webhookId: 'a' }));
    d.enqueue(notification({ receiver: 'slow', webhookId: 'b' }));
    d.enqueue(notification({ receiver: 'slow', webhookId: 'c' }));
    expect(d.enqueue(notification({ receiver: 'slow', webhookId: 'd' }))).toBe(false);
    expect(d.stats.dropped).toBe(1);
    d.enqueue(notification({ receiver: 'fast', webhookId: 'e' }));
    await fast.waitFor(1);
    expect(performance.now() - started).toBeLessThan(5000);
    await d.stop();
  });

  it('a notification being retried takes a reloaded receiver\'s new url and headers from its next attempt', async () => {
    const old = await sink();
    old.reply = () => ({ status: 503 });
    const fixed = await sink();
    const d = new Dispatcher({ receivers: [receiver(old.url)], links: { externalUrl: '' }, logger: silentLogger, deadlineMs: 10_000, maxQueue: 10, baseDelayMs: 200, maxDelayMs: 200 });
    const finished: string[] = [];
    d['opts'].onFinished = (_n, outcome) => void finished.push(outcome);
    d.enqueue(notification());
    await old.waitFor(1);
    d.reconfigure({ receivers: [receiver(fixed.url, { headers: { 'X-Team': 'renamed' } })], deadlineMs: 10_000, maxQueue: 10 });
    await d.idle();
    expect(finished).toEqual(['delivered']);
    expect(fixed.requests).toHaveLength(1);
    expect(fixed.requests[0]?.headers['x-team']).toBe('renamed');
    expect(fixed.requests[0]?.headers['webhook-id']).toBe(old.requests[0]?.headers['webhook-id']);
    expect(old.requests.length).toBeLessThanOrEqual(2);
    await d.stop();
  });

  it('gives up without an attempt on a notification whose wait to go out carried it past its delivery deadline', async () => {
    // A resolution waits for the renewal in flight to its Alertmanager receiver, up to the receiver's timeout.
    const s = await sink();
    const attempts: AttemptResult[] = [];
    const finished: string[] = [];
    const d = new Dispatcher({
      receivers: [receiver(s.url)], links: { externalUrl: '' }, logger: silentLogger, deadlineMs: 100, maxQueue: 10,
      ready: () => new Promise((resolve) => setTimeout(resolve, 300)),
      onAttempt: (_n, a) => void attempts.push(a), onFinished: (_n, o) => void finished.push(o),
    });
    d.enqueue(notification({ status: 'resolved' }));
    await d.idle();
    expect(s.requests).toHaveLength(0);
    expect(attempts).toMatchObject([{ attempt: 0, outcome: 'failed', httpStatus: null, error: expect.stringContaining('delivery deadline') }]);
    expect(finished).toEqual(['failed']);
    expect([d.stats.failed, d.stats.attempts]).toEqual([1, 0]);
    // Already past its deadline when it was queued (resumed from the outbox after a restart): it has its attempt.
    d.enqueue(notification({ webhookId: 'msg_late', status: 'resolved', createdAtMs: Date.now() - 1000 }));
    await d.idle();
    expect(s.requests.map((r) => r.headers['webhook-id'])).toEqual(['msg_late']);
    expect(finished).toEqual(['failed', 'delivered']);
    await d.stop();
  });

  it('counts the notifications given up on by why on /metrics: the status class, a timeout, no connection', async () => {
    const refusing = await sink();
    refusing.reply = () => ({ status: 404 });
    const redirecting = await sink();
    redirecting.reply = () => ({ status: 302, headers: { location: 'http://127.0.0.1:2/elsewhere' } });
    const down = await sink();
    down.reply = () => ({ status: 503 });
    const hanging = await sink();
    hanging.reply = () => ({ status: 200, delayMs: 5000 });
    const closed = await sink();
    const closedUrl = closed.url;
    await closed.close();
    const d = new Dispatcher({
      receivers: [
        receiver(refusing.url, { name: 'refusing' }), receiver(redirecting.url, { name: 'redirecting' }), receiver(down.url, { name: 'down' }),
        receiver(hanging.url, { name: 'hanging', timeoutMs: 200 }), receiver(closedUrl, { name: 'closed' }),
      ],
      links: { externalUrl: '' }, logger: silentLogger, deadlineMs: 400, maxQueue: 10, baseDelayMs: 5, maxDelayMs: 20,
    });
    for (const name of ['refusing', 'redirecting', 'down', 'hanging', 'closed']) d.enqueue(notification({ receiver: name, webhookId: `msg_${name}` }));
    await d.idle();
    const metrics = new MetricsRegistry();
    registerNotifyMetrics(metrics, d.stats);
    const families = parseExposition(await metrics.render());
    const reasons = ['refused_3xx', 'refused_4xx', 'refused_5xx', 'unreachable', 'timeout', 'tls', 'other'];
    expect(Object.fromEntries(reasons.map((reason) => [reason, sampleValue(families, 'hookwatch_notification_failures_total', { reason })]))).toEqual({
      refused_3xx: 1, refused_4xx: 1, refused_5xx: 1, unreachable: 1, timeout: 1, tls: 0, other: 0,
    });
    expect(sampleValue(families, 'hookwatch_notifications_total', { outcome: 'failed' })).toBe(5);
    await d.stop();
  });

  it('renders the Alertmanager v4 body and a readable Slack text', () => {
    const n = notification({ createdAtMs: Date.parse('2026-11-30T10:00:00.250Z') });
    const body = alertmanagerBody(n, { externalUrl: 'https://hw.example.com/' });
    expect(Object.keys(body).sort()).toEqual(['alerts', 'commonAnnotations', 'commonLabels', 'externalURL', 'groupKey', 'groupLabels', 'receiver', 'status', 'truncatedAlerts', 'version']);
    expect(Object.keys(body.alerts[0] ?? {}).sort()).toEqual(['annotations', 'endsAt', 'fingerprint', 'generatorURL', 'labels', 'startsAt', 'status']);
    // The hook's page from an hour before the alert to when it was notified, in whole 2-minute buckets (its chart's).
    const link = 'https://hw.example.com/hooks/0123456789abcdef?range=custom&from=2026-11-30T09%3A00%3A00Z&to=2026-11-30T10%3A02%3A00Z';
    expect(body.alerts[0]?.generatorURL).toBe(link);
    const text = slackText({ ...n, alert: { ...n.alert, labels: { ...n.alert.labels, team: 'a<b' } } }, { externalUrl: 'https://hw.example.com' });
    expect(text).toContain('[FIRING] persisted');
    expect(text).toContain('SessionStart:startup');
    expect(text).toContain('saved to a file');
    expect(text).toContain('Since 2026-11-30T10:00:00.000Z');
    expect(text).toContain('team=a&lt;b');
    expect(text).toContain(`<${link}|Open in hookwatch>`);
    const resolved = slackText({ ...n, status: 'resolved', alert: { ...n.alert, endsAt: '2026-11-30T11:00:00.000Z' } }, { externalUrl: '' });
    expect(resolved).toContain('[RESOLVED]');
    expect(resolved).toContain('to 2026-11-30T11:00:00.000Z');
    // A resolved alert's page ends when it resolved; late outputs stamped before it start it an hour earlier (in
    // the whole 6-hour buckets of a 10-day chart).
    const late = { ...n.alert, endsAt: '2026-11-30T11:00:00.000Z', annotations: { ...n.alert.annotations, first_event_time: '2026-11-20T08:30:05.000Z' } };
    expect(alertmanagerBody({ ...n, status: 'resolved', alert: late }, { externalUrl: 'https://hw.example.com' }).alerts[0]?.generatorURL)
      .toBe('https://hw.example.com/hooks/0123456789abcdef?range=custom&from=2026-11-20T06%3A00%3A00Z&to=2026-11-30T12%3A00%3A00Z');
    // An alert of no single hook links to the alerts page; a quiet feed's to the overview from an hour before its
    // last event (its evidence) to when it was notified.
    expect(alertmanagerBody({ ...n, alert: { ...n.alert, hookId: null } }, { externalUrl: 'https://hw.example.com' }).alerts[0]?.generatorURL).toBe('https://hw.example.com/alerts');
    const feed = { ...n.alert, hookId: null, labels: { alertname: 'silence', severity: 'warning', scope: 'feed' }, firstEventAt: '2026-11-30T07:10:00.000Z', annotations: { last_event: '2026-11-30T07:10:00.000Z' } };
    expect(alertmanagerBody({ ...n, alert: feed }, { externalUrl: 'https://hw.example.com' }).alerts[0]?.generatorURL)
      .toBe('https://hw.example.com/?range=custom&from=2026-11-30T06%3A10%3A00Z&to=2026-11-30T10%3A05%3A00Z');
  });

  it('links a firing alert to the dashboard\'s silence form prefilled with its labels: a webhook annotation, a second Slack link', () => {
    const n = notification({ createdAtMs: Date.parse('2026-11-30T10:00:00.250Z') });
    const alert = { ...n.alert, labels: { ...n.alert.labels, hook_name: 'PreToolUse:Write|Edit', team: 'a&b' } };
    const ctx = { externalUrl: 'https://hw.example.com/' };
    const silence = 'https://hw.example.com/alerts?silence.alertname=persisted&silence.severity=critical&silence.hook_event=SessionStart&silence.hook_name=PreToolUse%3AWrite%7CEdit&silence.team=a%26b';
    const body = alertmanagerBody({ ...n, alert }, ctx);
    // Beside the other annotations, where consumers read links; the v4 shape and generatorURL are unchanged.
    expect(body.alerts[0]?.annotations).toEqual({ ...n.alert.annotations, silence_url: silence });
    expect(body.commonAnnotations).toEqual(body.alerts[0]?.annotations);
    expect(Object.keys(body.alerts[0] ?? {}).sort()).toEqual(['annotations', 'endsAt', 'fingerprint', 'generatorURL', 'labels', 'startsAt', 'status']);
    expect(body.alerts[0]?.generatorURL).toMatch(/^https:\/\/hw\.example\.com\/hooks\/0123456789abcdef\?/);
    expect(slackText({ ...n, alert }, ctx).split('\n').at(-1)).toBe(`<${body.alerts[0]?.generatorURL}|Open in hookwatch> · <${silence}|Silence>`);
    // Never for a resolution, a test notification, or without a dashboard to link to.
    const resolved = { ...n, status: 'resolved' as const, alert: { ...alert, endsAt: '2026-11-30T11:00:00.000Z' } };
    expect(alertmanagerBody(resolved, ctx).alerts[0]?.annotations).not.toHaveProperty('silence_url');
    expect(slackText(resolved, ctx)).not.toContain('|Silence>');
    expect(alertmanagerBody({ ...n, test: true }, ctx).commonAnnotations).not.toHaveProperty('silence_url');
    expect(slackText({ ...n, test: true }, ctx)).not.toContain('|Silence>');
    expect(alertmanagerBody(n, { externalUrl: '' }).alerts[0]?.annotations).not.toHaveProperty('silence_url');
  });

  it('adds alerting.externalLabels to the webhook body\'s labels, common and group labels, fingerprint and group key; a reload changes them', async () => {
    const s = await sink();
    const receiver: ReceiverConfig = { name: 'ops', type: 'webhook', url: s.url, headers: {}, signingSecret: '', timeoutMs: 2000, sendResolved: true };
    const d = new Dispatcher({ receivers: [receiver], links: { externalUrl: 'https://hw.example.com/' }, externalLabels: { env: 'prod', a_zone: 'eu-1' }, logger: silentLogger, deadlineMs: 10_000, maxQueue: 10 });
    try {
      d.enqueue(notification());
      await d.idle();
      const body = JSON.parse(s.requests[0]?.body ?? '') as ReturnType<typeof alertmanagerBody>;
      const labels = { alertname: 'persisted', severity: 'critical', hook_event: 'SessionStart', hook_name: 'SessionStart:startup', env: 'prod', a_zone: 'eu-1' };
      expect(body.alerts[0]?.labels).toEqual(labels);
      expect(body.commonLabels).toEqual(labels);
      // The group is this deployment's: its labels in byte order, as Alertmanager writes a label set.
      expect(Object.entries(body.groupLabels)).toEqual([['a_zone', 'eu-1'], ['alertname', 'persisted'], ['env', 'prod']]);
      expect(body.groupKey).toBe('{}:{a_zone="eu-1", alertname="persisted", env="prod", fingerprint="aaaaaaaaaaaaaaaa"}');
      expect(body.alerts[0]?.fingerprint).toBe(alertmanagerFingerprint(labels));
      expect(body.alerts[0]?.fingerprint).not.toBe(alertmanagerFingerprint(notification().alert.labels));
      // The silence link fills hookwatch's form with the labels its silences match: the alert's own.
      expect(body.alerts[0]?.annotations['silence_url']).toBe('https://hw.example.com/alerts?silence.alertname=persisted&silence.severity=critical&silence.hook_event=SessionStart&silence.hook_name=SessionStart%3Astartup');

      d.reconfigure({ receivers: [receiver], deadlineMs: 10_000, maxQueue: 10, externalLabels: {} });
      d.enqueue(notification({ webhookId: 'msg_test2' }));
      await d.idle();
      // None: the body as without the setting.
      const plain = JSON.parse(s.requests[1]?.body ?? '') as ReturnType<typeof alertmanagerBody>;
      expect(plain.alerts[0]?.labels).toEqual(notification().alert.labels);
      expect(plain.groupLabels).toEqual({ alertname: 'persisted' });
      expect(plain.groupKey).toBe('{}:{alertname="persisted", fingerprint="aaaaaaaaaaaaaaaa"}');
    } finally {
      await d.stop();
    }
  });

  it('tells Slack that guard trims the hook, when the alert says so', () => {
    const guard = '`hookwatch guard` already trims this hook: 2 outputs trimmed in the 1h before the alert became active; the largest was 14,200 characters (stdout), 9,500 delivered.';
    const n = notification();
    const text = slackText({ ...n, alert: { ...n.alert, annotations: { ...n.alert.annotations, guard, guard_trims: '2' } } }, { externalUrl: '' });
    expect(text.split('\n')).toContain(guard);
    expect(slackText(n, { externalUrl: '' })).not.toContain('hookwatch guard` already');
  });

  it('checks signing secrets without echoing them', () => {
    expect(signingSecretProblem(SECRET)).toBeUndefined();
    expect(signingSecretProblem('plain-secret-value')).toMatch(/whsec_/);
    expect(signingSecretProblem('whsec_c2hvcnQ=')).toMatch(/16 bytes/);
    expect(signingSecretProblem('whsec_not base64!')).not.toContain('not base64!');
  });

  it('refuses a receiver url on a port fetch never connects to (a bad port), naming the port and not the url', async () => {
    // Every attempt to such a port fails before it is made: a notification would be retried until its deadline.
    const r = await sendWithRetry(() => ({ body: '{}', headers: {} }), { url: 'http://127.0.0.1:6000/hook', timeoutMs: 1000, deadlineMs: Date.now() + 1000, maxAttempts: 1 });
    expect(r).toMatchObject({ outcome: 'failed', httpStatus: null, error: 'bad port' });
    const receiver = (url: string): unknown[] => [{ name: 'ops', url }];
    expect(() => parseReceivers(receiver('https://hooks.example.test:6000/services/secret-token-xyz'))).toThrow(/^alerting\.receivers\[0\]\.url: port 6000 is one fetch never connects to/);
    expect(() => parseReceivers(receiver('http://hooks.example.test:5060/services/secret-token-xyz'))).toThrow(expect.objectContaining({ message: expect.not.stringContaining('secret-token-xyz') }));
    expect(parseReceivers(receiver('http://hooks.example.test:6001/x'))).toHaveLength(1);
    // A scheme's default port is not written in the URL: never refused.
    expect(parseReceivers(receiver('https://hooks.example.test:443/x'))).toHaveLength(1);
  });
});

describe('OTLP alert events', () => {
  it('appends /v1/logs to the endpoint\'s path and keeps its query (a vendor\'s key) after it', () => {
    expect(logsUrl('https://otlp.example.com/otlp?api-key=K')).toBe('https://otlp.example.com/otlp/v1/logs?api-key=K');
    expect(logsUrl('https://otlp.example.com/otlp/?api-key=K')).toBe('https://otlp.example.com/otlp/v1/logs?api-key=K');
    expect(logsUrl('https://otlp.example.com/otlp/v1/logs?api-key=K')).toBe('https://otlp.example.com/otlp/v1/logs?api-key=K');
    expect(logsUrl('http://collector:4318')).toBe('http://collector:4318/v1/logs');
  });

  it('exports each transition as an OTLP log record to the configured endpoint', async () => {
    const s = await sink();
    s.reply = otlpAccepted;
    expect(logsUrl(`${s.url}/`)).toBe(`${s.url}/v1/logs`);
    expect(logsUrl(`${s.url}/v1/logs`)).toBe(`${s.url}/v1/logs`);
    const { logger, lines } = recordingLogger();
    const e = new OtlpAlertEmitter({ endpoint: s.url, headers: { authorization: 'Bearer t0ken' }, serviceVersion: '0.1.0', scheduledDelayMs: 10, logger });
    e.emit({ id: 'f-1', fingerprint: 'f', rule: 'persisted', state: 'firing', labels: { alertname: 'persisted', severity: 'critical', hook_name: 'SessionStart:startup', hook_event: 'SessionStart' }, annotations: { summary: 'lost' }, atMs: Date.now() });
    await e.shutdown();
    await s.waitFor(1);
    // Accepted as an OTLP receiver answers: nothing for the SDK to warn about, nothing failed.
    expect(e.stats).toMatchObject({ exported: 1, failed: 0, dropped: 0 });
    expect(lines).toEqual([]);
    const r = s.requests[0];
    expect(r?.path).toBe('/v1/logs');
    expect(r?.headers['authorization']).toBe('Bearer t0ken');
    const body = JSON.parse(r?.body ?? '{}') as { resourceLogs: { resource: { attributes: { key: string; value: { stringValue?: string } }[] }; scopeLogs: { logRecords: { body: { stringValue: string }; eventName?: string; severityText: string; attributes: { key: string; value: { stringValue?: string } }[] }[] }[] }[] };
    const rl = body.resourceLogs[0];
    expect(rl?.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue).toBe('hookwatch');
    const rec = rl?.scopeLogs[0]?.logRecords[0];
    expect(rec?.body.stringValue).toBe('[FIRING] persisted: lost');
    expect(rec?.severityText).toBe('CRITICAL');
    const attrs = Object.fromEntries((rec?.attributes ?? []).map((a) => [a.key, a.value.stringValue]));
    expect(attrs).toMatchObject({ 'hookwatch.alert.state': 'firing', 'hookwatch.alert.rule': 'persisted', hook_name: 'SessionStart:startup' });
  });
});
