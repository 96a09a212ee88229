import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, expect, it } from 'vitest';

import { defaultWithinMs, outputOf, runHookwatch } from './hookwatch-process.ts';
import { alive, waitFor } from './processes.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hookwatch-process-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

it('kills a process still running past its bound, with its group and what left it, and fails with what it wrote last', async () => {
  const pids = join(dir, 'pids');
  // A group of its own; in it a sleep whose shell is gone (no longer below the child), and one that left the group
  // (setsid); then the shell itself sleeps.
  const script = `(sleep 60 & echo $! > '${pids}'); setsid sleep 60 & echo $! >> '${pids}'; printf 'x%.0s' $(seq 5000); printf 'started'; printf 'warming up' >&2; exec sleep 60`;
  const child = spawn('/bin/sh', ['-c', script], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const error = await outputOf(child, { withinMs: 2_000 }).then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(Error);
  const message = (error as Error).message;
  expect(message).toMatch(/^\/bin\/sh -c \(sleep 60 & .* still ran after \d+\.\d s \(bound 2 s\): killed, with what it started\n/);
  // The end of each output, not all of it.
  expect(message).toContain(`--- last of its stdout ---\n${'x'.repeat(4_096 - 'started'.length)}started\n`);
  expect(message).not.toContain('x'.repeat(4_096));
  expect(message).toMatch(/--- last of its stderr ---\nwarming up$/);
  const [inGroup, leftGroup] = (await readFile(pids, 'utf8')).trim().split('\n').map(Number);
  for (const pid of [child.pid ?? NaN, inGroup ?? NaN, leftGroup ?? NaN]) {
    expect(pid).toBeGreaterThan(0);
    await waitFor(async () => !alive(pid), { what: `pid ${pid} gone` });
  }
});

it('kills hookwatch past its bound with the hook it runs, which is in a group of its own', async () => {
  const pidFile = join(dir, 'hook.pid');
  const error = await runHookwatch(['check', '--timeout', '60', '--', `echo $$ > '${pidFile}'; exec sleep 60`], { cwd: dir, withinMs: 5_000 }).then(() => undefined, (e: unknown) => e);
  expect((error as Error).message).toMatch(/hookwatch\.mjs check --timeout 60 -- .* still ran after \d+\.\d s \(bound 5 s\)/);
  const hook = Number(await readFile(pidFile, 'utf8'));
  expect(hook).toBeGreaterThan(0);
  await waitFor(async () => !alive(hook), { what: 'the hook gone' });
});

it('resolves a process ending within its bound as before', async () => {
  const child = spawn('/bin/sh', ['-c', 'printf out; printf err >&2; exit 3'], { stdio: ['ignore', 'pipe', 'pipe'] });
  expect(await outputOf(child, { withinMs: 60_000 })).toEqual({ code: 3, stdout: 'out', stderr: 'err' });
});

it('bounds a process by the time its test has left, 2 s before its timeout, 90 s at most and 1 s at least', () => {
  const now = 1_000_000;
  expect(defaultWithinMs(undefined, now)).toBe(90_000);
  // Not started (no result yet): the longest.
  expect(defaultWithinMs({ timeout: 5_000 }, now)).toBe(90_000);
  expect(defaultWithinMs({ timeout: 30_000, result: { startTime: now - 10_000 } }, now)).toBe(18_000);
  expect(defaultWithinMs({ timeout: 600_000, result: { startTime: now } }, now)).toBe(90_000);
  // Started in the last 2 s of its test, or past its timeout: it still runs, not killed at once.
  expect(defaultWithinMs({ timeout: 5_000, result: { startTime: now - 4_000 } }, now)).toBe(1_000);
  expect(defaultWithinMs({ timeout: 5_000, result: { startTime: now - 9_000 } }, now)).toBe(1_000);
});

it('bounds a process by the test running it when given no bound', { timeout: 20_000 }, () => {
  expect(defaultWithinMs()).toBeGreaterThan(1_000);
  expect(defaultWithinMs()).toBeLessThanOrEqual(18_000);
});
