/**
 * What the backup tests of both stores share: `hookwatch backup` (and `restore`) run as an operator runs it, a telemetry stream
 * through the real OpenTelemetry exporter whose acknowledged events are always a prefix, and the views an
 * operator reads to compare a restored store with its original, and the notifications a receiver gets across a
 * restore.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider, type LogRecordExporter, type ReadableLogRecord } from '@opentelemetry/sdk-logs';
import { expect } from 'vitest';
import { openSqlite } from '../../src/store/sqlite/database.ts';
import { SqliteStore } from '../../src/store/sqlite/index.ts';
import { getJson, withoutBucketEnds } from '../helpers.ts';
import { startWebhookReceiver } from './postgres/replicas.ts';
import { emitExecutions } from './service.ts';

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));
export const run = promisify(execFile);

export interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

/** `hookwatch backup ...` started in a process of its own, as an operator (or kubectl exec) runs it. */
export function startBackup(args: string[], env: Record<string, string> = {}, shell?: string, wrap?: string): { child: ChildProcess; done: Promise<Run & { signal: NodeJS.Signals | null }> } {
  return startCommand('backup', args, env, shell, wrap);
}

/**
 * `hookwatch restore ...` started in a process of its own; under `wrap` when given: shell words of a command that
 * runs the one after it in the same process (strace -D), where `$$` is the pid hookwatch runs as.
 */
export function startRestore(args: string[], env: Record<string, string> = {}, shell?: string, wrap?: string): { child: ChildProcess; done: Promise<Run & { signal: NodeJS.Signals | null }> } {
  return startCommand('restore', args, env, shell, wrap);
}

/** `hookwatch restore ...` run to its end. */
export async function hookwatchRestore(args: string[], env: Record<string, string> = {}, shell?: string): Promise<Run> {
  const { status, stdout, stderr, signal } = await startRestore(args, env, shell).done;
  if (signal !== null) throw new Error(`hookwatch restore was killed by ${signal}: ${stderr}`);
  return { status, stdout, stderr };
}

/**
 * `hookwatch <command> ...` in a process of its own, after `shell` (commands such as ulimit) when given, under
 * `wrap` (startRestore) when given.
 */
function startCommand(command: string, args: string[], env: Record<string, string>, shell: string | undefined, wrap?: string): { child: ChildProcess; done: Promise<Run & { signal: NodeJS.Signals | null }> } {
  const [file, argv] = shell === undefined && wrap === undefined ? [process.execPath, [MAIN, command, ...args]] : ['/bin/sh', ['-c', `${shell ?? ':'}; exec ${wrap ?? ''} "$0" "$@"`, process.execPath, MAIN, command, ...args]];
  const child = spawn(file, argv, { env: { PATH: process.env['PATH'] ?? '', ...env }, timeout: 60_000, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const done = new Promise<Run & { signal: NodeJS.Signals | null }>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ status: code ?? -1, signal, stdout, stderr }));
  });
  return { child, done };
}

/** `hookwatch backup ...` run to its end. */
export async function hookwatchBackup(args: string[], env: Record<string, string> = {}, shell?: string): Promise<Run> {
  const { status, stdout, stderr, signal } = await startBackup(args, env, shell).done;
  if (signal !== null) throw new Error(`hookwatch backup was killed by ${signal}: ${stderr}`);
  return { status, stdout, stderr };
}

/**
 * A Claude Code session sending one batch at a time through the real exporter, each batch awaited: the events
 * acknowledged are always the first `acked` of the stream, event i stamped `fromMs + i`.
 */
export class Stream {
  acked = 0;
  failures = 0;
  private readonly results: number[] = [];
  private readonly provider: LoggerProvider;
  private readonly hookName: string;
  private readonly fromMs: number;
  private sent = 0;
  private stopped = false;

  constructor(otlpHttpUrl: string, hookName: string, fromMs: number) {
    this.hookName = hookName;
    this.fromMs = fromMs;
    const inner = new OTLPLogExporter({ url: `${otlpHttpUrl}/v1/logs`, timeoutMillis: 20_000 });
    const exporter: LogRecordExporter = {
      export: (records: ReadableLogRecord[], done) => inner.export(records, (r) => {
        this.results.push(r.code);
        done(r);
      }),
      shutdown: () => inner.shutdown(),
      forceFlush: () => inner.forceFlush(),
    };
    this.provider = new LoggerProvider({
      resource: resourceFromAttributes({ 'service.name': 'claude-code', 'service.version': '2.1.332' }),
      processors: [new BatchLogRecordProcessor({ exporter, maxQueueSize: 4096, maxExportBatchSize: 512, scheduledDelayMillis: 60_000 })],
    });
  }

  /** Sends `batches` batches of `size`, or until stop(); resolves when the last one is answered. */
  async send(batches: number, size: number): Promise<void> {
    const logger = this.provider.getLogger('com.anthropic.claude_code.events', '2.1.332');
    for (let b = 0; b < batches && !this.stopped; b++) {
      for (let i = 0; i < size; i++) {
        const n = this.sent++;
        logger.emit({
          body: 'claude_code.hook_execution_complete',
          timestamp: new Date(this.fromMs + n),
          attributes: {
            'event.name': 'hook_execution_complete', 'event.timestamp': new Date(this.fromMs + n).toISOString(), 'event.sequence': String(n),
            'session.id': `backup-${this.hookName}`, hook_event: this.hookName.split(':')[0] as string, hook_name: this.hookName,
            num_hooks: '1', num_success: '1', num_blocking: '0', num_non_blocking_error: '0', num_cancelled: '0', total_duration_ms: '7',
            stdout_chars: String(n % 5000), additional_context_chars: '0', system_message_chars: '0', initial_user_message_chars: '0', num_outputs_persisted: '0',
          },
        });
      }
      const before = this.results.length;
      await this.provider.forceFlush();
      // One export per batch; a refused one leaves the rest unacknowledged, as the stream stops counting.
      if (this.results.length === before + 1 && this.results[before] === 0 && this.failures === 0) this.acked += size;
      else this.failures++;
    }
  }

  stop(): void {
    this.stopped = true;
  }

  shutdown(): Promise<void> {
    return this.provider.shutdown();
  }
}

/**
 * A new folder `dir` holding an empty hookwatch store with a `padding` table of `padRows` rows of 4,000 random
 * bytes (about a page each), and where the table's root page is.
 */
export async function paddedStore(dir: string, padRows: number): Promise<{ dir: string; path: string; root: number; pageSize: number }> {
  mkdirSync(dir);
  const path = join(dir, 'hookwatch.db');
  await new SqliteStore({ path }).close();
  const db = openSqlite(path);
  db.exec('CREATE TABLE padding (pad BLOB NOT NULL); BEGIN');
  const insert = db.prepare('INSERT INTO padding VALUES (randomblob(4000))');
  for (let i = 0; i < padRows; i++) insert.run();
  db.exec('COMMIT');
  const { root, size } = db.prepare('SELECT rootpage AS root, (SELECT page_size FROM pragma_page_size) AS size FROM sqlite_schema WHERE name = ?').get('padding') as { root: number; size: number };
  db.close();
  return { dir, path, root, pageSize: size };
}

/** The views an operator reads, over `range`: every hook but `except`, its series, the alerts and the silences. */
export async function views(base: string, range: string, except: string[]): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  const { body } = await getJson<{ hooks: { id: string; hookName: string }[] }>(base, `/api/v1/hooks?${range}`);
  out['hooks'] = body.hooks.filter((h) => !except.includes(h.hookName));
  // The range runs past now: what each bucket counts is compared, not where the one still filling ends.
  for (const h of out['hooks'] as { id: string; hookName: string }[]) out[`series ${h.hookName}`] = withoutBucketEnds((await getJson(base, `/api/v1/hooks/${h.id}/series?${range}&step=1h`)).body);
  out['silences'] = (await getJson(base, '/api/v1/silences')).body;
  const { alerts } = (await getJson<{ alerts: Record<string, unknown>[] }>(base, '/api/v1/alerts')).body;
  out['alerts'] = alerts.map((a) => ({ id: a['id'], state: a['state'], labels: a['labels'], startsAt: a['startsAt'], silencedBy: a['silencedBy'] }));
  return out;
}

/** A `persisted` rule evaluated often: the alerts the backup tests fire. */
export const ALERTING = `alerting:
  evaluationInterval: 100ms
  rules:
    - { kind: persisted, window: 1h }
`;

/** How many alerts hookwatch at `base` has firing. */
export async function firing(base: string): Promise<number> {
  return (await getJson<{ alerts: { state: string }[] }>(base, '/api/v1/alerts')).body.alerts.filter((a) => a.state === 'firing').length;
}

/**
 * A history the backup tests copy: `batches` batches of 500 events of `Notification:history` from 50 minutes ago,
 * three hooks of which two go over the cap (two alerts of the ALERTING rule), one of them silenced; returns once
 * both fire.
 */
export async function seedHistory(service: { otlpHttpUrl: string; httpUrl: string }, now: number, batches: number): Promise<void> {
  const filler = new Stream(service.otlpHttpUrl, 'Notification:history', now - 50 * 60_000);
  await filler.send(batches, 500);
  await filler.shutdown();
  expect(filler.failures).toBe(0);
  await emitExecutions(service.otlpHttpUrl, [
    { hookEvent: 'PostToolUse', hookName: 'PostToolUse:Bash', stdoutChars: 14_000, outputsPersisted: 1 },
    { hookEvent: 'SessionStart', hookName: 'SessionStart:startup', stdoutChars: 900 },
    { hookEvent: 'PostToolUse', hookName: 'PostToolUse:Edit', additionalContextChars: 12_000, outputsPersisted: 1 },
  ]);
  const silence = await fetch(`${service.httpUrl}/api/v1/silences`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ matchers: [{ name: 'hook_name', value: 'PostToolUse:Edit' }], endsAt: new Date(now + 86_400_000).toISOString(), createdBy: 'ops', comment: 'known' }),
  });
  expect(silence.status).toBe(201);
  await expect.poll(() => firing(service.httpUrl), { timeout: 15_000 }).toBe(2);
}

/** The hookwatch a restore test starts: where to send telemetry and read the API. */
export interface Served {
  otlpHttpUrl: string;
  httpUrl: string;
}

/**
 * What on-call receives across a backup and a restore, at a real webhook receiver. On the original: alert A is
 * notified before the backup; alert C's notification is refused (503, retried) until the backup is taken, then
 * delivered; alert B fires and is notified after it. `steps.backup` copies the original's store, `steps.stop`
 * stops it, `steps.restore` starts a hookwatch on the copy. After the restore, over the evaluations until A and C
 * clear, the receiver gets C's notification again (the copy holds it undelivered) with the same webhook-id, and
 * the resolutions of A and C; not A's firing again, and nothing of B, whose events and alert the copy lacks.
 * The events are stamped two minutes back: arrivals older than the rule's window, which clear `window` after
 * they arrived, so the alerts resolve while the test runs.
 */
export async function notificationsAcrossRestore(steps: {
  serve(yaml: string): Promise<Served>;
  backup(): Promise<void>;
  stop(): Promise<void>;
  restore(yaml: string): Promise<Served>;
}): Promise<void> {
  const webhook = await startWebhookReceiver();
  try {
    const yaml = `alerting:
  evaluationInterval: 100ms
  rules:
    - { kind: persisted, window: 12s }
  delivery: { initialBackoff: 50ms, maxBackoff: 100ms }
  receivers:
    - { name: ops, type: webhook, url: ${webhook.url} }
`;
    const persist = (s: Served, hookName: string): Promise<unknown> =>
      emitExecutions(s.otlpHttpUrl, [{ hookEvent: 'PostToolUse', hookName, stdoutChars: 14_000, outputsPersisted: 1 }], {}, { atMs: Date.now() - 120_000 });
    const seen = (): string[] => webhook.deliveries.map((d) => `${d.labels['hook_name']} ${d.status} ${d.answered}`);
    const original = await steps.serve(yaml);
    await persist(original, 'PostToolUse:A');
    await expect.poll(seen, { timeout: 15_000 }).toEqual(['PostToolUse:A firing 200']);
    webhook.answer(503);
    await persist(original, 'PostToolUse:C');
    await expect.poll(seen, { timeout: 15_000 }).toContain('PostToolUse:C firing 503');
    await steps.backup();
    webhook.answer(200);
    await expect.poll(seen, { timeout: 15_000 }).toContain('PostToolUse:C firing 200');
    await persist(original, 'PostToolUse:B');
    await expect.poll(seen, { timeout: 15_000 }).toContain('PostToolUse:B firing 200');
    await steps.stop();
    // Every alert was still firing when the original stopped: one notification each, C's after retries.
    expect(new Set(seen())).toEqual(new Set(['PostToolUse:A firing 200', 'PostToolUse:C firing 503', 'PostToolUse:C firing 200', 'PostToolUse:B firing 200']));
    const before = webhook.deliveries.length;
    const delivered = (hook: string): string | undefined => webhook.deliveries.find((d) => d.labels['hook_name'] === hook && d.answered === 200)?.webhookId;
    const [idA, idC] = [delivered('PostToolUse:A'), delivered('PostToolUse:C')];

    const restored = await steps.restore(yaml);
    const after = (): string[] => seen().slice(before);
    await expect.poll(after, { timeout: 40_000 }).toEqual(expect.arrayContaining(['PostToolUse:A resolved 200', 'PostToolUse:C resolved 200']));
    expect(after()).toHaveLength(3);
    expect(after()[0]).toBe('PostToolUse:C firing 200');
    const again = webhook.deliveries.slice(before);
    expect(again[0]?.webhookId).toBe(idC);
    expect(again.map((d) => d.webhookId)).not.toContain(idA);
    // B is unknown to the restored hookwatch: its alert list has A and C, resolved.
    const { alerts } = (await getJson<{ alerts: { state: string; labels: Record<string, string> }[] }>(restored.httpUrl, '/api/v1/alerts')).body;
    expect(alerts.map((a) => `${a.labels['hook_name']} ${a.state}`).sort()).toEqual(['PostToolUse:A resolved', 'PostToolUse:C resolved']);
  } finally {
    await webhook.close();
  }
}
