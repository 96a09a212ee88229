import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { GuardTrimsResponse } from '../../../../shared/src/guard-trims.ts';
import { getJson, postOtlp, startTestService } from '../../../test/helpers.ts';
import type { TestService } from '../../../test/helpers.ts';
import { captureIO } from '../../../test/support/capture-io.ts';
import { noImportMetaMainPreload, writePreload } from '../../../test/support/preloads.ts';
import { hookId } from '../../hooks/extract.ts';
import { runCheck } from '../check/index.ts';
import { reportFailureWords, sendReport } from './report-send.ts';
import { requireTool, runs } from '../../../test/required-tool.ts';

/** util-linux `script`, which gives the guard a terminal for stderr. */
const HAVE_SCRIPT = requireTool(runs('script', ['--version']), 'script (util-linux)', 'apt-get install bsdutils');
const BIN = fileURLToPath(new URL('../../../bin/hookwatch.mjs', import.meta.url));
const INPUT = JSON.stringify({ session_id: 'sess-report', hook_event_name: 'SessionStart', source: 'startup' });
const HOOK = hookId('SessionStart', 'SessionStart:startup');

let service: TestService;
let dir: string;
beforeAll(async () => {
  service = await startTestService();
  dir = await mkdtemp(join(tmpdir(), 'hookwatch-guard-report-'));
});
afterAll(async () => {
  await service?.close();
  await rm(dir, { recursive: true, force: true });
});

interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function guard(args: string[], env: NodeJS.ProcessEnv = {}, input = INPUT, options: { closeStdout?: boolean; onStart?: (pid: number) => void; nodeArgs?: string[] } = {}): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...(options.nodeArgs ?? []), BIN, 'guard', ...args], { env: { ...process.env, HOOKWATCH_GUARD_DIR: dir, ...env }, cwd: dir });
    let stdout = '';
    let stderr = '';
    // The reader of the hook's output gone (Claude Code after its timeout), before the input is even written.
    if (options.closeStdout === true) child.stdout.destroy();
    else child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
    child.stdin.on('error', () => undefined);
    child.stdin.end(input);
    if (child.pid !== undefined) options.onStart?.(child.pid);
  });
}

async function trims(): Promise<GuardTrimsResponse> {
  return (await getJson<GuardTrimsResponse>(service.httpUrl, `/api/v1/hooks/${HOOK}/guard-trims?from=now-1h`)).body;
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  for (let i = 0; i < 400; i++) {
    const value = await read();
    if (done(value)) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('timed out waiting');
}

/**
 * A relay between guards and the test's hookwatch: passes every request on and records its body once hookwatch has
 * answered it; with `loseFirst`, answers the first 503 instead of hookwatch's answer (lost after it was stored).
 */
async function relay(loseFirst = false): Promise<{ url: string; answered: string[]; close(): void }> {
  const answered: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      void postOtlp(service.otlpHttpUrl, req.url ?? '/v1/logs', body, { 'content-type': req.headers['content-type'] ?? 'application/json' }).then((answer) => {
        answered.push(body.toString('base64'));
        if (loseFirst && answered.length === 1) res.writeHead(503).end();
        else res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' }).end(answer.body);
      }, () => res.writeHead(502).end());
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    answered,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

describe('hookwatch guard --report', () => {
  it('sends one record per trimmed output that hookwatch stores and serves for the hook', async () => {
    const payload = JSON.stringify({ hookSpecificOutput: { hookEventName: 'SessionStart', additionalContext: 'a '.repeat(7_500) }, systemMessage: 'b'.repeat(12_000) });
    const ran = await guard(['--report', service.otlpHttpUrl, '--', process.execPath, '-e', `process.stdout.write(${JSON.stringify(payload)})`]);
    expect(ran.code).toBe(0);
    const body = await until(trims, (t) => t.trims >= 2);
    expect(body.trims).toBe(2);
    expect(body.largest?.field).toBe('hookSpecificOutput.additionalContext');
    expect(body.largest?.sentChars).toBe(15_000);
    expect(body.largest?.keptChars).toBeLessThanOrEqual(9_500);
    expect(body.buckets.reduce((n, b) => n + b.trims, 0)).toBe(2);
    expect(body.buckets.every((b) => b.maxKeptChars < 10_000 && b.maxSentChars > 10_000)).toBe(true);

    // Output within budget sends nothing; HOOKWATCH_GUARD_REPORT works like --report.
    await guard(['--', 'echo', 'small'], { HOOKWATCH_GUARD_REPORT: service.otlpHttpUrl });
    await guard(['--', '/bin/sh', '-c', `head -c 11000 /dev/zero | tr '\\0' x`], { HOOKWATCH_GUARD_REPORT: service.otlpHttpUrl });
    expect((await until(trims, (t) => t.trims >= 3)).trims).toBe(3);
  });

  it('names the hook of an input larger than the guard keeps (a PostToolUse for a Write of a big file)', async () => {
    const input = JSON.stringify({
      session_id: 'sess-big-input',
      hook_event_name: 'PostToolUse',
      tool_name: 'Write',
      tool_input: { file_path: join(dir, 'big.txt'), content: 'w'.repeat(3 * 1024 * 1024) },
      tool_response: { success: true },
      tool_use_id: 'toolu_big',
    });
    const hook = hookId('PostToolUse', 'PostToolUse:Write');
    const ran = await guard(['--report', service.otlpHttpUrl, '--', '/bin/sh', '-c', `cat >/dev/null; head -c 12000 /dev/zero | tr '\\0' x`], {}, input);
    expect(ran.code).toBe(0);
    expect(ran.stdout.length).toBeLessThanOrEqual(9_500);
    const read = async (): Promise<GuardTrimsResponse> => (await getJson<GuardTrimsResponse>(service.httpUrl, `/api/v1/hooks/${hook}/guard-trims?from=now-1h`)).body;
    const body = await until(read, (t) => t.trims >= 1);
    expect(body.largest).toMatchObject({ field: 'stdout', sentChars: 12_000 });
  });

  it('sends on every Node the engines range takes, 24.0 and 24.1 included, which have no import.meta.main', async () => {
    // Run as on those versions: this preload makes import.meta.main read undefined in every .ts module, the guard's
    // and the sender's (the preload goes with the guard's execArgv to the process that sends).
    const preload = await noImportMetaMainPreload(dir);
    const input = JSON.stringify({ session_id: 'sess-node-24-0', hook_event_name: 'PreCompact', trigger: 'auto' });
    const ran = await guard(['--report', service.otlpHttpUrl, '--', '/bin/sh', '-c', `head -c 12000 /dev/zero | tr '\\0' x`], {}, input, { nodeArgs: ['--import', preload] });
    expect([ran.code, ran.stderr]).toEqual([0, '']);
    expect(ran.stdout.length).toBeLessThanOrEqual(9_500);
    const read = async (): Promise<GuardTrimsResponse> => (await getJson<GuardTrimsResponse>(service.httpUrl, `/api/v1/hooks/${hookId('PreCompact', 'PreCompact:auto')}/guard-trims?from=now-1h`)).body;
    expect((await until(read, (t) => t.trims >= 1)).largest).toMatchObject({ field: 'stdout', sentChars: 12_000 });
  });

  it('counts two trims by two identical commands of one event, run in parallel in the same millisecond, as two', async () => {
    // Claude Code runs an event's hooks in parallel: two guards of the same command, same input, same sizes. Both
    // processes (and the senders they start, which inherit their Node options) read the same clock, so their records
    // carry the same time to the millisecond and differ by nothing else they measure.
    const clock = join(dir, 'frozen-clock.mjs');
    await writeFile(clock, [
      'const at = Number(process.env.FROZEN_CLOCK_MS);',
      'const Real = Date;',
      'globalThis.Date = class extends Real { constructor(...a) { if (a.length === 0) super(at); else super(...a); } static now() { return at; } };',
    ].join('\n'));
    const input = JSON.stringify({ session_id: 'sess-parallel', hook_event_name: 'PreToolUse', tool_name: 'Bash', tool_input: { command: 'ls' } });
    const hook = hookId('PreToolUse', 'PreToolUse:Bash');
    const to = await relay();
    try {
      const command = ['--report', to.url, '--', '/bin/sh', '-c', `cat >/dev/null; head -c 12000 /dev/zero | tr '\\0' p`];
      const env = { NODE_OPTIONS: `--import ${pathToFileURL(clock).href}`, FROZEN_CLOCK_MS: String(Date.now()) };
      const ran = await Promise.all([guard(command, env, input), guard(command, env, input)]);
      expect(ran.map((r) => [r.code, r.stdout.length <= 9_500])).toEqual([[0, true], [0, true]]);
      // Both reports answered by hookwatch: it holds both trims.
      await until(async () => to.answered.length, (n) => n >= 2);
      expect(to.answered).toHaveLength(2);
      expect((await getJson<GuardTrimsResponse>(service.httpUrl, `/api/v1/hooks/${hook}/guard-trims?from=now-1h`)).body.trims).toBe(2);
    } finally {
      to.close();
    }
  });

  it('counts a retried export once: an answer lost after hookwatch stored the trim makes the exporter send it again', async () => {
    const to = await relay(true);
    try {
      const input = JSON.stringify({ session_id: 'sess-retry', hook_event_name: 'PreToolUse', tool_name: 'Read', tool_input: { file_path: '/x' } });
      const hook = hookId('PreToolUse', 'PreToolUse:Read');
      const ran = await guard(['--report', to.url, '--', '/bin/sh', '-c', `cat >/dev/null; head -c 12000 /dev/zero | tr '\\0' r`], {}, input);
      expect(ran.code).toBe(0);
      await until(async () => to.answered.length, (n) => n >= 2);
      // The same request twice, both stored by hookwatch: one trim.
      expect(to.answered[1]).toBe(to.answered[0]);
      expect((await getJson<GuardTrimsResponse>(service.httpUrl, `/api/v1/hooks/${hook}/guard-trims?from=now-1h`)).body.trims).toBe(1);
    } finally {
      to.close();
    }
  });

  it('does not hold the hook when the endpoint never answers', async () => {
    let received = 0;
    const hanging = createServer(() => {
      received++;
    });
    await new Promise<void>((r) => hanging.listen(0, '127.0.0.1', r));
    try {
      const port = (hanging.address() as AddressInfo).port;
      const ran = await guard(['--report', `http://127.0.0.1:${port}`, '--', '/bin/sh', '-c', `head -c 12000 /dev/zero | tr '\\0' y`]);
      // The guard has exited with the trimmed output; the report arrives afterwards from its own process.
      expect(ran.code).toBe(0);
      expect(ran.stdout.length).toBeLessThanOrEqual(9_500);
      await until(async () => received, (n) => n > 0);
    } finally {
      hanging.closeAllConnections();
      hanging.close();
    }
  });

  it('authenticates with the OTLP headers Claude Code passes on to its hooks when hookwatch needs an ingest token', async () => {
    const guarded = await startTestService({ HOOKWATCH_INGEST_TOKEN: 'guard-secret-8d2f4a' });
    try {
      const path = `/api/v1/hooks/${HOOK}/guard-trims?from=now-1h`;
      const hook = ['--', '/bin/sh', '-c', `head -c 12000 /dev/zero | tr '\\0' z`];
      await guard(['--report', guarded.otlpHttpUrl, ...hook], { OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Bearer guard-secret-8d2f4a' });
      const stored = await until(async () => (await getJson<GuardTrimsResponse>(guarded.httpUrl, path)).body, (t) => t.trims > 0);
      expect(stored.trims).toBe(1);
    } finally {
      await guarded.close();
    }
  });

  it('reports nothing when hookwatch check runs the guarded hook on made-up input, and still measures what it delivers', async () => {
    const hook = hookId('UserPromptSubmit', 'UserPromptSubmit');
    const read = async (): Promise<GuardTrimsResponse> => (await getJson<GuardTrimsResponse>(service.httpUrl, `/api/v1/hooks/${hook}/guard-trims?from=now-1h`)).body;
    const original = `cat >/dev/null; head -c 12000 /dev/zero | tr '\\0' q`;
    const command = `${process.execPath} ${BIN} guard --report ${service.otlpHttpUrl} -- ${JSON.stringify(original)}`;
    const project = join(dir, 'checked');
    await mkdir(join(project, '.claude'), { recursive: true });
    await writeFile(join(project, '.claude', 'settings.json'), JSON.stringify({ hooks: { UserPromptSubmit: [{ hooks: [{ type: 'command', command }] }] } }));
    const out = captureIO(project, { ...process.env, HOOKWATCH_GUARD_DIR: dir, HOOKWATCH_GUARD_REPORT: service.otlpHttpUrl });
    expect(await runCheck(['--settings', '.claude/settings.json', '--json'], out.io)).toBe(0);
    const checked = JSON.parse(out.stdout()) as { hooks: { outputs: { field: string; sent: number }[] }[] };
    expect(checked.hooks[0]?.outputs).toEqual([expect.objectContaining({ field: 'stdout' })]);
    expect(checked.hooks[0]?.outputs[0]?.sent).toBeLessThanOrEqual(9_500);
    const text = captureIO(project, { ...process.env, HOOKWATCH_GUARD_DIR: dir });
    await runCheck(['--settings', '.claude/settings.json'], text.io);
    expect(text.stdout()).toContain('HOOKWATCH_GUARD_NO_REPORT=1: its trims of this made-up input are not reported');

    // The same hook run by Claude Code (no such variable) reports its trim; it arrives after any the checks sent,
    // which were sent first: exactly one means the checks sent none.
    const ran = await guard(['--report', service.otlpHttpUrl, '--', '/bin/sh', '-c', original], {}, JSON.stringify({ session_id: 'sess-real', hook_event_name: 'UserPromptSubmit', prompt: 'hi' }));
    expect(ran.code).toBe(0);
    await until(read, (t) => t.trims >= 1);
    await new Promise((r) => setTimeout(r, 500));
    expect((await read()).trims).toBe(1);
  });

  it('reports no trim of an output that never reached the model: a stdout closed unread, a stopped run, a killed command', async () => {
    const input = JSON.stringify({ session_id: 'sess-undelivered', hook_event_name: 'SubagentStop' });
    const hook = hookId('SubagentStop', 'SubagentStop');
    const read = async (): Promise<GuardTrimsResponse> => (await getJson<GuardTrimsResponse>(service.httpUrl, `/api/v1/hooks/${hook}/guard-trims?from=now-1h`)).body;
    const to = await relay();
    try {
      const report = ['--report', to.url];
      // Over the cap once the hook has read all its input, which arrives only after stdout is closed.
      const closed = await guard([...report, '--', '/bin/sh', '-c', `cat >/dev/null; head -c 12000 /dev/zero | tr '\\0' u`], {}, input, { closeStdout: true });
      expect([closed.code, closed.signal]).toEqual([0, null]);
      expect(closed.stderr).toBe('hookwatch guard: the output could not be written (EPIPE)\n');

      // Stopped the way Claude Code stops a hook on its timeout; the command answers the stop with a full output.
      const ready = join(dir, 'undelivered-ready');
      let guardPid = 0;
      const stoppedRun = guard([...report, '--', process.execPath, '-e', `process.on('SIGTERM',()=>process.stdout.write('s'.repeat(12000),()=>process.exit(0)));require('fs').writeFileSync(${JSON.stringify(ready)},'1');setInterval(()=>{},1000)`], {}, input, {
        onStart: (pid) => (guardPid = pid),
      });
      await until(async () => (await readFile(ready, 'utf8').catch(() => '')) === '1' && guardPid > 0, (ok) => ok);
      process.kill(guardPid, 'SIGTERM');
      const stopped = await stoppedRun;
      expect(stopped.signal).toBe('SIGTERM');

      // Stopped at the guard's --timeout with an output too large to hold: cut to the budget, and not reported.
      const timedOut = await guard([...report, '--timeout', '1', '--', '/bin/sh', '-c', `cat >/dev/null; head -c 3000000 /dev/zero | tr '\\0' t; sleep 30`], { HOOKWATCH_GUARD_SPILL_BYTES: String(1024 * 1024) }, input);
      expect(timedOut.signal).toBe('SIGTERM');
      expect(timedOut.stdout.length).toBeLessThanOrEqual(9_500);

      // The command killed by a signal after writing an output over the cap.
      const killed = await guard([...report, '--', process.execPath, '-e', `process.stdout.write('k'.repeat(12000),()=>process.kill(process.pid,'SIGKILL'))`], {}, input);
      expect(killed.signal).toBe('SIGKILL');

      // The same hook delivering its trimmed output reports it; a report of the runs before would have been sent
      // first, by senders started before this run.
      const delivered = await guard([...report, '--', '/bin/sh', '-c', `cat >/dev/null; head -c 12000 /dev/zero | tr '\\0' d`], {}, input);
      expect(delivered.code).toBe(0);
      expect(delivered.stdout.length).toBeLessThanOrEqual(9_500);
      await until(read, (t) => t.trims >= 1);
      await new Promise((r) => setTimeout(r, 1_000));
      expect((await read()).trims).toBe(1);
      expect(to.answered).toHaveLength(1);
    } finally {
      to.close();
    }
  });

  it.each([
    ['the API port', (s: TestService) => s.httpUrl, 'answered HTTP 404: it is no OTLP/HTTP receiver; hookwatch receives OTLP/HTTP on otlp.http.addr (port 4318 by default), not on its API port'],
    ['the gRPC port', (s: TestService) => s.otlpGrpcUrl, 'did not answer in HTTP/1.1 (HPE_INVALID_CONSTANT): a gRPC port? hookwatch receives OTLP/HTTP on otlp.http.addr (port 4318 by default)'],
  ])('a report sent to %s says on stderr that it was not delivered, host and port only, the hook\'s output and exit code unchanged', async (_port, address, words) => {
    const own = await mkdtemp(join(dir, 'failed-'));
    const url = new URL(address(service));
    const hostPort = `${url.hostname}:${url.port}`;
    // Userinfo and a query, which may hold a token, are never written.
    const target = `http://ops:Pw-9f3k2@${hostPort}/?token=Q-s3cret`;
    const hook = ['--', '/bin/sh', '-c', `head -c 12000 /dev/zero | tr '\\0' w`];
    const plain = await guard(hook, { HOOKWATCH_GUARD_DIR: own });
    const first = await guard(['--report', target, ...hook], { HOOKWATCH_GUARD_DIR: own });
    expect([first.code, first.stdout.length, first.stderr]).toEqual([0, plain.stdout.length, '']);
    // Under Claude Code stderr is a pipe, read to its end: the detached sender cannot say it there, so the next
    // run that reports does, once.
    const said = await until(async () => (await readFile(join(own, 'report-failed.txt'), 'utf8').catch(() => '')), (t) => t !== '');
    expect(said).not.toMatch(/Pw-9f3k2|ops|Q-s3cret|token/);
    const second = await guard(['--report', target, ...hook], { HOOKWATCH_GUARD_DIR: own });
    expect([second.code, second.stdout.length]).toEqual([0, plain.stdout.length]);
    expect(second.stderr).toMatch(new RegExp(`^hookwatch guard: an earlier trim report was not delivered: [^\\n]*${words.replace(/[().?]/g, '\\$&')}[^\\n]*\\n$`));
    expect(second.stderr).toContain(hostPort);
    expect(second.stderr).not.toMatch(/Pw-9f3k2|ops:|Q-s3cret|token/);
    await until(async () => (await readFile(join(own, 'report-failed.txt'), 'utf8').catch(() => '')), (t) => t !== '');
  });

  it('keeps the stderr of a hook that blocks exactly the command\'s: an earlier failure is said by a later run that does not block', async () => {
    const own = await mkdtemp(join(dir, 'blocked-'));
    const failed = join(own, 'report-failed.txt');
    await writeFile(failed, 'connection refused (ECONNREFUSED): nothing listens at 127.0.0.1:9\n', { mode: 0o600 });
    // Exit 2 with an output past what is saved (--keep-size): cut as plain text and reported, whatever its exit status.
    const spill = { HOOKWATCH_GUARD_DIR: own, HOOKWATCH_GUARD_SPILL_BYTES: String(1024 * 1024) };
    const blocked = await guard(['--report', service.otlpHttpUrl, '--keep-size', '2MiB', '--', '/bin/sh', '-c', `head -c 5000000 /dev/zero | tr '\\0' e; echo "blocked: reason" >&2; exit 2`], spill);
    expect([blocked.code, blocked.stderr]).toEqual([2, 'blocked: reason\n']);
    expect(blocked.stdout.length).toBeLessThanOrEqual(9_500);
    // Kept for a run whose stderr is the guard's to write on.
    expect(await readFile(failed, 'utf8')).toBe('connection refused (ECONNREFUSED): nothing listens at 127.0.0.1:9\n');
    const next = await guard(['--report', service.otlpHttpUrl, '--', '/bin/sh', '-c', `head -c 12000 /dev/zero | tr '\\0' e`], { HOOKWATCH_GUARD_DIR: own });
    expect([next.code, next.stderr]).toEqual([0, 'hookwatch guard: an earlier trim report was not delivered: connection refused (ECONNREFUSED): nothing listens at 127.0.0.1:9\n']);
  });

  it('removes the copies of the failure line a process ended before removing, once they are a minute old, when it takes the line', async () => {
    const own = await mkdtemp(join(dir, 'stale-'));
    await writeFile(join(own, 'report-failed.txt'), 'connection refused (ECONNREFUSED): nothing listens at 127.0.0.1:9\n', { mode: 0o600 });
    // A sender killed between its write and its rename, and a run killed between its rename and its removal, long
    // ago; a sender writing its line now (its pid need not be this machine's: the folder may be a container's too).
    // A file's change time cannot be set (utimes sets it to now): the guard runs with its clock 2 minutes ahead,
    // and the copy being written has its modification time at the guard's now.
    const ahead = 2 * 60_000;
    const clockAhead = await writePreload(own, 'clock-ahead.mjs', [`const real = Date.now; Date.now = () => real() + ${ahead};`]);
    const old = new Date(Date.now() - 10 * 60_000);
    for (const name of ['report-failed.txt.4194301', 'report-failed.txt.77']) {
      await writeFile(join(own, name), 'lost on the way\n', { mode: 0o600 });
      await utimes(join(own, name), old, old);
    }
    await writeFile(join(own, 'report-failed.txt.4194302'), 'being written\n', { mode: 0o600 });
    const writing = new Date(Date.now() + ahead);
    await utimes(join(own, 'report-failed.txt.4194302'), writing, writing);
    // Names the guard never writes are not its to remove, however old.
    for (const name of ['report-failed.txt.bak', 'report-failed.txt.12.tmp']) {
      await writeFile(join(own, name), 'kept\n');
      await utimes(join(own, name), old, old);
    }
    const run = await guard(['--report', service.otlpHttpUrl, '--', '/bin/sh', '-c', `head -c 12000 /dev/zero | tr '\\0' s`], { HOOKWATCH_GUARD_DIR: own }, INPUT, { nodeArgs: ['--import', clockAhead] });
    expect([run.code, run.stderr]).toEqual([0, 'hookwatch guard: an earlier trim report was not delivered: connection refused (ECONNREFUSED): nothing listens at 127.0.0.1:9\n']);
    const left = (await readdir(own)).filter((name) => name.startsWith('report-failed'));
    expect(left.sort()).toEqual(['report-failed.txt.12.tmp', 'report-failed.txt.4194302', 'report-failed.txt.bak']);
  });

  it('keeps the copy of the failure line a run beside it has just taken, however long ago the line was written', async () => {
    const own = await mkdtemp(join(dir, 'taken-'));
    // Written 10 minutes ago, renamed aside a moment ago by a run reading it: a rename keeps the modification time.
    const line = join(own, 'report-failed.txt');
    await writeFile(line, 'connection refused (ECONNREFUSED): nothing listens at 127.0.0.1:9\n', { mode: 0o600 });
    const old = new Date(Date.now() - 10 * 60_000);
    await utimes(line, old, old);
    const taken = join(own, 'report-failed.txt.4194303');
    await rename(line, taken);
    const run = await guard(['--report', service.otlpHttpUrl, '--', '/bin/sh', '-c', `head -c 12000 /dev/zero | tr '\\0' t`], { HOOKWATCH_GUARD_DIR: own });
    expect([run.code, run.stderr]).toEqual([0, '']);
    expect(await readFile(taken, 'utf8')).toBe('connection refused (ECONNREFUSED): nothing listens at 127.0.0.1:9\n');
  });

  it.runIf(HAVE_SCRIPT)('at a terminal, a failed report is said there by the sender', async () => {
    const own = await mkdtemp(join(dir, 'tty-'));
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    // The terminal stays open until the test is done, while the detached sender tries; its line arrives there after
    // the guard exited.
    const done = join(own, 'done');
    const line = `${process.execPath} ${BIN} guard --report http://127.0.0.1:${port} -- /bin/sh -c "head -c 12000 /dev/zero | tr '\\0' v" >/dev/null; echo "guard exited $?"; while [ ! -e ${done} ]; do sleep 0.1; done`;
    const terminal = spawn('script', ['-qec', line, '/dev/null'], { env: { ...process.env, HOOKWATCH_GUARD_DIR: own }, stdio: ['ignore', 'pipe', 'ignore'] });
    let seen = '';
    terminal.stdout.on('data', (c: Buffer) => (seen += c.toString()));
    try {
      await until(async () => seen, (t) => t.includes('not delivered'));
      expect(seen).toContain('guard exited 0');
      expect(seen).toContain(`hookwatch guard: a trim report was not delivered: connection refused (ECONNREFUSED): nothing listens at 127.0.0.1:${port}`);
      expect(seen.indexOf('guard exited 0')).toBeLessThan(seen.indexOf('not delivered'));
    } finally {
      await writeFile(done, '');
      if (terminal.exitCode === null) await new Promise((r) => terminal.once('exit', r));
    }
  });

  it('names a bad --report URL at once, and runs the hook without reporting', async () => {
    const ran = await guard(['--report', 'hookwatch:4318', '--', 'true']);
    expect(ran.code).toBe(0);
    expect(ran.stderr).toContain('--report: expected an http(s) URL, got "hookwatch:4318"; trims are not reported');
    // Where nothing runs (--install), the same URL is an error and the settings file is not touched.
    const settings = JSON.stringify({ hooks: { Stop: [{ hooks: [{ type: 'command', command: './stop.sh' }] }] } });
    await writeFile(join(dir, 'settings.json'), settings);
    const install = await guard(['--install', 'settings.json', '--report', 'hookwatch:4318']);
    expect(install.code).toBe(2);
    expect(install.stderr).toContain('--report: expected an http(s) URL, got "hookwatch:4318"');
    expect(await readFile(join(dir, 'settings.json'), 'utf8')).toBe(settings);
  });
});

describe('the words of an undelivered trim report', () => {
  it('say that the receiver kept answering a retryable status, host and port only', async () => {
    let answered = 0;
    const busy = createServer((req, res) => {
      answered++;
      req.resume();
      req.on('end', () => res.writeHead(503).end());
    });
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    try {
      const port = (busy.address() as AddressInfo).port;
      const words = await sendReport(`http://ops:Pw-9f3k2@127.0.0.1:${port}/v1/logs?token=Q-s3cret`, { hookEvent: 'Stop', hookName: 'Stop', sessionId: undefined, trims: [{ field: 'stdout', sentChars: 12_000, keptChars: 9_500 }] });
      expect(answered).toBeGreaterThan(1);
      expect(words).toBe(`127.0.0.1:${port} kept answering a retryable status (HTTP 429, 502, 503 or 504)`);
    } finally {
      busy.closeAllConnections();
      busy.close();
    }
  });

  it('name no URL an error\'s message holds, only the host and port it was sent to', () => {
    const url = 'http://ops:Pw-9f3k2@collector.example:4318/v1/logs?token=Q-s3cret';
    const words = reportFailureWords(url, new Error(`request to ${url} failed, reason: socket hang up; redirected to https://ops@elsewhere.example/v1/logs?token=Q-s3cret`));
    expect(words).toBe('the export to collector.example:4318 failed (request to collector.example:4318 failed, reason: socket hang up; redirected to collector.example:4318)');
  });
});

describe('ingest of guard records', () => {
  it('rejects a malformed record on its own with a message naming the problem', async () => {
    const attrs = (field: string) => [
      { key: 'event.name', value: { stringValue: 'hookwatch.guard_trim' } },
      { key: 'hook_event', value: { stringValue: 'Stop' } },
      { key: 'field', value: { stringValue: field } },
      { key: 'sent_chars', value: { stringValue: '12000' } },
      { key: 'kept_chars', value: { stringValue: '9500' } },
    ];
    const body = { resourceLogs: [{ resource: { attributes: [] }, scopeLogs: [{ logRecords: [{ timeUnixNano: String(Date.now() * 1e6), attributes: attrs('stdout') }, { timeUnixNano: '1', attributes: attrs('stderr') }] }] }] };
    const res = await postOtlp(service.otlpHttpUrl, '/v1/logs', JSON.stringify(body), { 'content-type': 'application/json' });
    expect(res.status).toBe(200);
    const answer = JSON.parse(res.body.toString()) as { partialSuccess?: { rejectedLogRecords?: number | string; errorMessage?: string } };
    expect(Number(answer.partialSuccess?.rejectedLogRecords)).toBe(1);
    expect(answer.partialSuccess?.errorMessage).toContain('field "stderr" is not one of');
    const stop = await getJson<GuardTrimsResponse>(service.httpUrl, `/api/v1/hooks/${hookId('Stop', 'Stop')}/guard-trims?from=now-1h`);
    expect(stop.body.trims).toBe(1);
    const bad = await getJson<{ error: { parameter: string } }>(service.httpUrl, `/api/v1/hooks/${HOOK}/guard-trims?step=7s`);
    expect(bad.status).toBe(400);
    expect(bad.body.error.parameter).toBe('step');
  });

  it('tells trims apart by their log.record.uid, and those of guards that send none by their content', async () => {
    const at = String(Date.now() * 1e6);
    const record = (uid?: { stringValue: string } | { intValue: string }) => ({
      timeUnixNano: at,
      attributes: [
        { key: 'event.name', value: { stringValue: 'hookwatch.guard_trim' } },
        { key: 'hook_event', value: { stringValue: 'Notification' } },
        { key: 'session.id', value: { stringValue: 'sess-uid' } },
        { key: 'field', value: { stringValue: 'stdout' } },
        { key: 'sent_chars', value: { stringValue: '12000' } },
        { key: 'kept_chars', value: { stringValue: '9500' } },
        ...(uid === undefined ? [] : [{ key: 'log.record.uid', value: uid }]),
      ],
    });
    const send = async (records: object[]): Promise<{ rejectedLogRecords?: number | string; errorMessage?: string } | undefined> => {
      const body = { resourceLogs: [{ resource: { attributes: [] }, scopeLogs: [{ logRecords: records }] }] };
      const res = await postOtlp(service.otlpHttpUrl, '/v1/logs', JSON.stringify(body), { 'content-type': 'application/json' });
      expect(res.status).toBe(200);
      return (JSON.parse(res.body.toString()) as { partialSuccess?: { rejectedLogRecords?: number | string; errorMessage?: string } }).partialSuccess;
    };
    const stored = async (): Promise<number> => (await getJson<GuardTrimsResponse>(service.httpUrl, `/api/v1/hooks/${hookId('Notification', 'Notification')}/guard-trims?from=now-1h`)).body.trims;
    // An older guard's record sent twice (a retry) is one trim, as before.
    await send([record(), record()]);
    expect(await stored()).toBe(1);
    // Two trims alike in everything but their uid are two; either sent again is neither a third nor a fourth.
    await send([record({ stringValue: 'a1' }), record({ stringValue: 'b2' })]);
    await send([record({ stringValue: 'b2' })]);
    expect(await stored()).toBe(3);
    // A uid that is no string is named, and its record rejected alone.
    const answer = await send([record({ intValue: '7' }), record({ stringValue: 'c3' })]);
    expect(Number(answer?.rejectedLogRecords)).toBe(1);
    expect(answer?.errorMessage).toContain('log.record.uid must be a string');
    expect(await stored()).toBe(4);
  });
});
