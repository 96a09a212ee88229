/**
 * The forward queue holds raw request bodies, user emails included: its file (and its -wal and -shm) is
 * readable by its owner only, and neither queued requests nor dead letters outlive retention.events; once they
 * expire, no copy of their bytes is left in the queue files.
 */
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { tempDir } from '../helpers.ts';
import { loadConfig, toConfig } from '../../src/config/index.ts';
import { startForwarding } from '../../src/forward/index.ts';
import { createLogger } from '../../src/telemetry/logger.ts';
import { forwardingStatus, sendSpans, startForwardRig, until, type ForwardRig } from './forward-support.ts';

const rigs: ForwardRig[] = [];
const dirs: (() => void)[] = [];
afterEach(async () => {
  for (const r of rigs.splice(0)) await r.close();
  for (const d of dirs.splice(0)) d();
});

const EMAIL = 'alice.retention@example.com';

function queueFiles(dir: string): string[] {
  return ['forward-queue.db', 'forward-queue.db-wal', 'forward-queue.db-shm'].map((f) => join(dir, f)).filter((f) => existsSync(f));
}

it('creates the queue files 0600', async () => {
  const rig = await startForwardRig();
  rigs.push(rig);
  expect(await sendSpans(rig.hw.otlpHttpUrl, ['one'])).toEqual(['one']);
  await until('delivery', () => rig.downstream.requests.length === 1);
  const files = queueFiles(rig.hw.dir);
  expect(files.map((f) => f.split('/').pop())).toEqual(['forward-queue.db', 'forward-queue.db-wal', 'forward-queue.db-shm']);
  for (const f of files) expect([f.split('/').pop(), (statSync(f).mode & 0o777).toString(8)]).toEqual([f.split('/').pop(), '600']);
});

it('creates the folder of forward.queue.path 0700 when it is not there', async () => {
  const { dir, cleanup } = tempDir('hookwatch-fwd-folder-');
  dirs.push(cleanup);
  const folder = join(dir, 'queue');
  const rig = await startForwardRig({ HOOKWATCH_FORWARD_QUEUE_PATH: join(folder, 'forward-queue.db') }, { dir });
  rigs.push(rig);
  expect(await sendSpans(rig.hw.otlpHttpUrl, ['one'])).toEqual(['one']);
  await until('delivery', () => rig.downstream.requests.length === 1);
  expect((statSync(folder).mode & 0o777).toString(8)).toBe('700');
  for (const f of queueFiles(folder)) expect([f.split('/').pop(), (statSync(f).mode & 0o777).toString(8)]).toEqual([f.split('/').pop(), '600']);
});

it('removes queued requests and dead letters past retention.events, leaving no copy of their bytes', { timeout: 60_000 }, async () => {
  const { dir, cleanup } = tempDir('hookwatch-fwd-retention-');
  dirs.push(cleanup);
  const env = { HOOKWATCH_RETENTION_EVENTS: '1h' };
  const first = await startForwardRig(env, { dir });
  // The first request is refused for good (a dead letter), the rest wait behind a downstream that is away.
  first.downstream.mode = { kind: 'status', status: 400 };
  expect(await sendSpans(first.hw.otlpHttpUrl, ['dead'], { attributes: { 'user.email': EMAIL } })).toEqual(['dead']);
  await until('a dead letter', async () => (await forwardingStatus(first.hw.httpUrl)).destinations[0]!.deadLetters === 1);
  first.downstream.mode = { kind: 'status', status: 503 };
  expect(await sendSpans(first.hw.otlpHttpUrl, ['queued-1', 'queued-2', 'queued-3'], { attributes: { 'user.email': EMAIL } })).toHaveLength(3);
  await first.hw.stop();
  await first.downstream.stop();
  // The bytes are there to be found while they are within retention.
  expect(queueFiles(dir).some((f) => readFileSync(f).includes(EMAIL))).toBe(true);

  // Two hours later (a clock the service reads), past retention.events: retention runs at start and hourly.
  const later = await startForwardRig(env, { dir, now: () => Date.now() + 2 * 3_600_000 });
  rigs.push(later);
  later.downstream.mode = { kind: 'status', status: 503 };
  const s = await forwardingStatus(later.hw.httpUrl);
  expect(s.destinations[0]!.depth).toBe(0);
  expect(s.deadLetterSummary).toMatchObject({ count: 0, expired: 4 });
  expect(later.downstream.requests).toHaveLength(0);
  for (const f of queueFiles(dir)) expect([f, readFileSync(f).includes(EMAIL)]).toEqual([f, false]);
});

it('in fan-out mode, says what a queue left from inline mode holds, and still removes it past retention', async () => {
  const { dir, cleanup } = tempDir('hookwatch-fwd-left-');
  dirs.push(cleanup);
  const inline = await startForwardRig({}, { dir });
  inline.downstream.mode = { kind: 'status', status: 503 };
  expect(await sendSpans(inline.hw.otlpHttpUrl, ['left-1', 'left-2'], { attributes: { 'user.email': EMAIL } })).toHaveLength(2);
  await inline.hw.stop();
  await inline.downstream.stop();

  // forward.endpoint removed: fan-out mode over the same folder.
  const lines: string[] = [];
  const logger = createLogger({ level: 'info', write: (l) => lines.push(l) });
  const config = toConfig(loadConfig({ env: { HOOKWATCH_FORWARD_QUEUE_PATH: join(dir, 'forward-queue.db') } })).forward;
  expect(config.endpoint).toBe('');
  expect(await startForwarding(config, { logger, retentionMs: 3_600_000 })).toBeUndefined();
  const warning = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => String(l['msg']).includes('forwarding is off'));
  expect(warning).toMatchObject({ level: 'warn', queued: 2, deadLetters: 0 });

  // Two hours later, past retention.events: removed, and nothing left to warn about.
  lines.length = 0;
  await startForwarding(config, { logger, retentionMs: 3_600_000, now: () => Date.now() + 2 * 3_600_000 });
  expect(lines.filter((l) => l.includes('forwarding is off'))).toEqual([]);
  for (const f of queueFiles(dir)) expect([f, readFileSync(f).includes(EMAIL)]).toEqual([f, false]);
});

it('in fan-out mode, neither creates a queue file nor stops over one it cannot read', async () => {
  const { dir, cleanup } = tempDir('hookwatch-fwd-bad-');
  dirs.push(cleanup);
  const lines: string[] = [];
  const logger = createLogger({ level: 'info', write: (l) => lines.push(l) });
  const path = join(dir, 'forward-queue.db');
  const config = toConfig(loadConfig({ env: { HOOKWATCH_FORWARD_QUEUE_PATH: path } })).forward;
  expect(await startForwarding(config, { logger, retentionMs: 3_600_000 })).toBeUndefined();
  expect(existsSync(path)).toBe(false);
  writeFileSync(path, 'not a database, whatever it once was '.repeat(200));
  expect(await startForwarding(config, { logger, retentionMs: 3_600_000 })).toBeUndefined();
  const warning = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => String(l['msg']).includes('cannot be read'));
  expect(warning).toMatchObject({ level: 'warn', path });
});
