import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { chmod, chown, lutimes, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { constants, tmpdir } from 'node:os';
import { basename, delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { StdoutCapture } from './capture.ts';
import { descendants } from '../common/processes.ts';
import { shellQuote } from '../common/shell-quote.ts';
import { hookwatchThroughNpm, PACKAGE_ROOT, shellPath } from '../../../test/support/npm-run.ts';
import { alive, waitFor } from '../../../test/support/processes.ts';
import { experimentalWarningsPreload, writePreload } from '../../../test/support/preloads.ts';
import { mountTmpfs, unmountTmpfs } from '../../../test/support/tmpfs.ts';

const BIN = fileURLToPath(new URL('../../../bin/hookwatch.mjs', import.meta.url));
const MAIN = fileURLToPath(new URL('../../main.ts', import.meta.url));
const INPUT = JSON.stringify({ session_id: 'sess-1', hook_event_name: 'SessionStart', source: 'startup', cwd: '/tmp' });

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hookwatch-guard-test-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Ran {
  stdout: Buffer;
  stderr: string;
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Runs `hookwatch guard` as Claude Code would: a real process, the hook input on stdin. */
function guard(args: string[], options: HookOptions = {}): Promise<Ran> {
  return spawnHook(process.execPath, [BIN, 'guard', ...args], options);
}

/** Runs a settings file's hook command line the way Claude Code does: through `sh -c`. */
function hookLine(line: string, options: { env?: NodeJS.ProcessEnv } = {}): Promise<Ran> {
  return spawnHook('/bin/sh', ['-c', line], options);
}

interface HookOptions {
  input?: string;
  env?: NodeJS.ProcessEnv;
  onStart?: (pid: number) => void;
  /** A run that should end by itself is killed (SIGKILL) after this long, so that a hang fails the test instead. */
  killAfterMs?: number;
  cwd?: string;
  /** Run as this user (and the group of the same number). */
  uid?: number;
  /** Close the reading end of stdout before the input is written, as Claude Code does once it gave up on a hook. */
  closeStdout?: boolean;
  /** Given, each chunk of stdout goes here and none is kept (for outputs too large to hold). */
  onStdout?: (chunk: Buffer) => void;
}

function spawnHook(file: string, args: string[], options: HookOptions): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { env: { ...process.env, HOOKWATCH_GUARD_DIR: dir, ...options.env }, cwd: options.cwd ?? dir, uid: options.uid, gid: options.uid, timeout: options.killAfterMs, killSignal: 'SIGKILL' });
    const out: Buffer[] = [];
    let err = '';
    if (options.closeStdout === true) child.stdout.destroy();
    else child.stdout.on('data', options.onStdout ?? ((c: Buffer) => out.push(c)));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ stdout: Buffer.concat(out), stderr: err, code, signal }));
    child.stdin.end(options.input ?? INPUT);
    if (child.pid !== undefined) options.onStart?.(child.pid);
  });
}

/**
 * Runs `hookwatch guard -- <hook>` on a terminal of its own: script(1) gives it one, and types there what is
 * written to its stdin. `started` reads the pids the hook writes to `<hook>.pids`.
 */
function atTerminal(hook: string): { process: ChildProcessWithoutNullStreams; ended: Promise<number | null>; screen: () => string; started: () => Promise<number[]> } {
  const terminal = spawn('script', ['-qec', `exec ${shellQuote(process.execPath)} ${shellQuote(BIN)} guard -- ${shellQuote(hook)}`, '/dev/null'], { env: { ...process.env, HOOKWATCH_GUARD_DIR: dir }, cwd: dir });
  let screen = '';
  terminal.stdout.on('data', (c: Buffer) => (screen += c.toString()));
  return {
    process: terminal,
    ended: new Promise<number | null>((resolve) => terminal.on('close', (code) => resolve(code))),
    screen: () => screen,
    started: async () => (await readFile(`${hook}.pids`, 'utf8').catch(() => '')).trim().split(/\s+/).filter(Boolean).map(Number),
  };
}

/** A node one-liner as the hook command (several argv words: run directly, no shell). */
const nodeHook = (code: string): string[] => ['--', process.execPath, '-e', code];

describe('hookwatch guard', () => {
  it('passes output within budget through byte for byte, with stdin, cwd and environment of the hook', async () => {
    const hook = `let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{process.stdout.write(Buffer.from([0xef,0xbb,0xbf]));process.stdout.write(JSON.stringify({in:JSON.parse(s).hook_event_name,cwd:process.cwd(),env:process.env.MY_VAR})+'  \\r\\n')})`;
    const ran = await guard(nodeHook(hook), { env: { MY_VAR: 'kept' } });
    expect(ran.code).toBe(0);
    const expected = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(`${JSON.stringify({ in: 'SessionStart', cwd: dir, env: 'kept' })}  \r\n`)]);
    expect(ran.stdout.equals(expected)).toBe(true);
  });

  it('started through npm, runs the command with the PATH and variables of the shell npm was started from', async () => {
    // As Claude Code would run the command without the guard; a folder the user put first on PATH stays first.
    const path = `${join(dir, 'user-bin')}${delimiter}${shellPath()}`;
    const hook = 'echo "$PATH"; env | grep ^npm_ | wc -l';
    const ran = await hookwatchThroughNpm('npm run', ['guard', '--', hook], { cwd: dir, env: { PATH: path, HOME: dir, HOOKWATCH_GUARD_DIR: dir }, input: INPUT });
    expect(ran.code, ran.stderr).toBe(0);
    const [hookPath, npmVariables] = ran.stdout.split('\n');
    expect(hookPath?.split(delimiter)).not.toContain(join(PACKAGE_ROOT, 'node_modules', '.bin'));
    expect(hookPath).toBe(path);
    expect(npmVariables?.trim()).toBe('0');
  });

  it('keeps the front of a 15,000-character plain stdout at the default budget and saves the whole of it', async () => {
    const ran = await guard(['--', `for i in $(seq 1 1000); do printf 'line %05d of the hook\\n' $i; done | head -c 15000`]);
    const out = ran.stdout.toString();
    expect(ran.code).toBe(0);
    expect(out.length).toBeLessThanOrEqual(9_500);
    expect(out.length).toBeGreaterThan(9_000);
    expect(out.startsWith('line 00001 of the hook\nline 00002')).toBe(true);
    const pointer = /\n\[hookwatch guard: ([\d,]+) more characters left out; the full output is in (\S+)\]$/.exec(out);
    expect(pointer).not.toBeNull();
    const full = await readFile(pointer?.[2] ?? '', 'utf8');
    expect(full.length).toBe(15_000);
    expect(Number(pointer?.[1]?.replace(/,/g, ''))).toBe(15_000 - out.indexOf('\n[hookwatch guard:') - 1);
    expect(full.startsWith(out.slice(0, out.indexOf('\n[hookwatch guard:')))).toBe(true);
  });

  it('trims the JSON fields separately and keeps valid JSON; --budget changes the budget', async () => {
    const payload = { hookSpecificOutput: { hookEventName: 'SessionStart', additionalContext: 'c '.repeat(7_500) }, systemMessage: 'm '.repeat(2_000) };
    const ran = await guard(['--budget', '3000', ...nodeHook(`process.stdout.write(${JSON.stringify(JSON.stringify(payload))})`)]);
    const out = JSON.parse(ran.stdout.toString()) as typeof payload;
    expect(out.hookSpecificOutput.additionalContext.length).toBeLessThanOrEqual(3_000);
    expect(out.hookSpecificOutput.additionalContext).toMatch(/left out; the full output is in .*hookSpecificOutput\.additionalContext\.txt\]$/);
    expect(out.systemMessage.length).toBeLessThanOrEqual(3_000);
    expect(out.hookSpecificOutput.hookEventName).toBe('SessionStart');
  });

  it('with the default budget, passes every string Claude Code delivers whole (up to 10,000) byte for byte and trims one over it', async () => {
    const hasLoneSurrogate = (s: string): boolean => /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);
    // n code units ending in an emoji: its surrogate pair straddles the old budget (9,501), the cap (10,001) or
    // ends exactly on it (10,000).
    const text = (n: number): string => `${'a'.repeat(n - 2)}😀`;
    const plain = (n: number): Buffer => Buffer.from(text(n));
    const json = (n: number): Buffer => Buffer.from(`{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": ${JSON.stringify(text(n))}}, "n": 1.0}\n`);
    const contextOf = (out: Buffer): string => (JSON.parse(out.toString()) as { hookSpecificOutput: { additionalContext: string } }).hookSpecificOutput.additionalContext;
    for (const [kind, make, delivered] of [['plain', plain, (out: Buffer) => out.toString()], ['json', json, contextOf]] as const) {
      for (const n of [9_501, 10_000, 10_001]) {
        const label = `${kind} ${n}`;
        const file = join(dir, `edge-${kind}-${n}.out`);
        await writeFile(file, make(n));
        const ran = await guard(['--', '/bin/cat', file]);
        expect(ran.code, label).toBe(0);
        if (n <= 10_000) expect(ran.stdout.equals(make(n)), label).toBe(true);
        else {
          const out = delivered(ran.stdout);
          expect(out.length, label).toBeLessThanOrEqual(9_500);
          expect(out.length, label).toBeGreaterThan(9_000);
          expect(out, label).toMatch(/more characters left out; the full output is in \S+\]$/);
          expect(hasLoneSurrogate(out), label).toBe(false);
        }
      }
    }
    // A budget given is the largest string kept, whatever the cap: 9,501 is trimmed at --budget 9500 (and at
    // HOOKWATCH_GUARD_BUDGET=9500), and 10,001 fits --budget 10000 once trimmed.
    const file = join(dir, 'edge-plain-9501.out');
    for (const [flags, env] of [[['--budget', '9500'], {}], [[], { HOOKWATCH_GUARD_BUDGET: '9500' }]] as const) {
      const ran = await guard([...flags, '--', '/bin/cat', file], { env });
      expect(ran.stdout.length, JSON.stringify([flags, env])).toBeLessThanOrEqual(9_500);
      expect(hasLoneSurrogate(ran.stdout.toString())).toBe(false);
    }
    const atCap = await guard(['--budget', '10000', '--', '/bin/cat', join(dir, 'edge-plain-10001.out')]);
    expect(atCap.stdout.toString().length).toBeLessThanOrEqual(10_000);
    expect(atCap.stdout.toString()).toMatch(/more characters left out/);
    // A bad budget keeps the default, and so the default rule.
    const bad = await guard(['--budget', 'lots', '--', '/bin/cat', join(dir, 'edge-plain-10000.out')]);
    expect(bad.stdout.equals(plain(10_000))).toBe(true);
  });

  it('delivers a trimmed JSON output as the hook wrote it but for the trimmed string', async () => {
    const before = '{\n  "decision" : "block", "score": 1.0, "limit": 1e3, "why": "caf\\u00e9",\n  "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": ';
    const after = '}\n}\n';
    const file = join(dir, 'json-as-written.out');
    await writeFile(file, `${before}${JSON.stringify('line of context\n'.repeat(1_000))}${after}`);
    const ran = await guard(['--', '/bin/cat', file]);
    const out = ran.stdout.toString();
    const context = (JSON.parse(out) as { hookSpecificOutput: { additionalContext: string } }).hookSpecificOutput.additionalContext;
    expect(context).toMatch(/^line of context\n[^]*more characters left out; the full output is in \S+\]$/);
    expect(out).toBe(`${before}${JSON.stringify(context)}${after}`);
  });

  it('passes exit codes through unchanged, 2 included, with stderr and the untouched stdout of a failing hook', async () => {
    for (const code of [0, 1, 2, 3, 42]) {
      const ran = await guard(nodeHook(`process.stderr.write('why ${code}');process.stdout.write('x'.repeat(12000));process.exitCode=${code}`));
      expect(ran.code).toBe(code);
      expect(ran.stderr).toBe(`why ${code}`);
      expect(ran.stdout.length).toBe(code === 0 ? ran.stdout.length : 12_000);
      if (code === 0) expect(ran.stdout.length).toBeLessThanOrEqual(9_500);
    }
  });

  it('dies by the same signal as the command, and passes a stop signal on to the command', async () => {
    const killed = await guard(nodeHook(`process.kill(process.pid,'SIGKILL')`));
    expect(killed.signal).toBe('SIGKILL');
    // Node ignores SIGPIPE (and takes SIGUSR1 for its inspector) from the start: the guard must still die by it.
    for (const signal of ['SIGPIPE', 'SIGUSR1'] as const) {
      const ran = await guard(['--', `kill -${signal.slice(3)} $$`]);
      expect([ran.code, ran.signal, ran.stderr], signal).toEqual([null, signal, '']);
    }
    const marker = join(dir, 'got-term');
    const ready = join(dir, 'hook-ready');
    let guardPid = 0;
    const fs = `require('fs')`;
    const pending = guard(nodeHook(`process.on('SIGTERM',()=>{${fs}.writeFileSync(${JSON.stringify(marker)},'1');process.exit(143)});${fs}.writeFileSync(${JSON.stringify(ready)},'1');setInterval(()=>{},1000)`), {
      onStart: (pid) => (guardPid = pid),
    });
    // Once the hook runs, the guard is stopped the way Claude Code stops a hook on its timeout.
    await waitFor(async () => (await stat(ready).then(() => true, () => false)) && guardPid > 0);
    process.kill(guardPid, 'SIGTERM');
    const ran = await pending;
    expect(ran.code).toBe(143);
    expect(await readFile(marker, 'utf8')).toBe('1');
  });

  it('passes the exit code on when its stdout is closed unread, and says the output could not be written', async () => {
    const cases = [[`cat >/dev/null; echo short; exit 3`, 3], [`cat >/dev/null; head -c 12000 /dev/zero | tr '\\0' c`, 0], [`cat >/dev/null; echo why >&2; echo out; exit 2`, 2]] as const;
    for (const [line, code] of cases) {
      const ran = await guard(['--', line], { closeStdout: true });
      // The stderr of a command that blocks stays exactly its own.
      expect([ran.code, ran.signal, ran.stderr], line).toEqual([code, null, code === 2 ? 'why\n' : 'hookwatch guard: the output could not be written (EPIPE)\n']);
    }
  });

  it('--timeout stops a command that runs too long', async () => {
    const ran = await guard(['--timeout', '1', ...nodeHook(`setInterval(()=>{},1000)`)]);
    expect(ran.signal).toBe('SIGTERM');
  });

  it('stops what a stopped shell command line started, stops waiting for what left its group, and never reports a stopped run as a success', async () => {
    // A settings-file command is a shell line: what it starts in the background can hold stdout open for long.
    // A stop (Claude Code's timeout signal, or the guard's own --timeout) ends it with the shell, in the group the
    // guard runs the line in, or below the shell while the shell runs; what left the group once the shell is gone
    // is found by neither, and left running.
    // The background process writes its pid itself, once it runs (after setsid).
    const line = (setsid: string, end: string) => (f: string) => `echo $$ > ${f}.sh; echo started; ${setsid}sh -c 'echo $$ > ${f}; exec sleep 60' & ${end}`;
    const cases = [
      { how: 'timeout', line: line('', 'wait'), backgroundSurvives: false },
      { how: 'signal', line: line('', 'wait'), backgroundSurvives: false },
      { how: 'signal', line: line('setsid ', 'wait'), backgroundSurvives: false },
      // The shell has exited 0 already; only its child holds stdout. Stopped, the run is not a success.
      { how: 'timeout', line: line('', 'exit 0'), backgroundSurvives: false },
      { how: 'signal', line: line('', 'exit 0'), backgroundSurvives: false },
      { how: 'signal', line: line('setsid ', 'exit 0'), backgroundSurvives: true },
    ] as const;
    for (const [i, c] of cases.entries()) {
      const pidFile = join(dir, `background-${i}.pid`);
      let guardPid = 0;
      const pending = guard([...(c.how === 'timeout' ? ['--timeout', '1'] : []), '--', c.line(pidFile)], { onStart: (pid) => (guardPid = pid) });
      await waitFor(async () => (await readFile(pidFile, 'utf8').then((s) => s.endsWith('\n'), () => false)) && guardPid > 0);
      const background = Number(await readFile(pidFile, 'utf8'));
      const shell = Number(await readFile(`${pidFile}.sh`, 'utf8'));
      // "exited 0 before the stop" means it: the signal goes once the shell is gone.
      if (c.line('f').endsWith('exit 0')) await waitFor(async () => !alive(shell));
      if (c.how === 'signal') process.kill(guardPid, 'SIGTERM');
      try {
        // The guard exits while what is left runs on (a survivor keeps the inherited stderr open, so the guard's
        // pipes close only once it is gone).
        await waitFor(async () => !alive(guardPid));
        if (c.backgroundSurvives) expect(alive(background), c.line('pid')).toBe(true);
        else await waitFor(async () => !alive(background));
      } finally {
        if (alive(background)) process.kill(background, 'SIGKILL');
      }
      const ran = await pending;
      expect([i, ran.signal, ran.code], c.line('pid')).toEqual([i, 'SIGTERM', null]);
    }
  }, 20_000);

  it('kills a stopped command that ignores the stop signal after a grace period, with what it runs then, and dies by the stop signal', async () => {
    const fs = `require('fs')`;
    // Each command writes "<its pid> <a child's pid>" once it ignores SIGTERM; the child runs in the same group.
    const cases = [
      // Claude Code's timeout stops the guard: a shell line that ignores TERM (its children inherit that).
      { how: 'signal', args: (f: string) => ['--', `trap '' TERM; sleep 60 & echo $$ $! > ${f}; wait`] },
      // The same for a command run directly, with a child it started itself.
      { how: 'signal', args: (f: string) => nodeHook(`process.on('SIGTERM',()=>{});const c=require('child_process').spawn('sleep',['60'],{stdio:'ignore'});${fs}.writeFileSync(${JSON.stringify(f)},process.pid+' '+c.pid+'\\n');setInterval(()=>{},1000)`) },
      // The guard's own timeout: the shell ends on TERM, what it started ignores it and holds no stdout.
      { how: 'timeout', args: (f: string) => ['--timeout', '1', '--', `${shellQuote(process.execPath)} -e ${shellQuote(`process.on('SIGTERM',()=>{});${fs}.writeFileSync(${JSON.stringify(f)},process.ppid+' '+process.pid+'\\n');setInterval(()=>{},1000)`)} >/dev/null & wait`] },
    ] as const;
    for (const [i, c] of cases.entries()) {
      const pidFile = join(dir, `ignores-term-${i}.pid`);
      let guardPid = 0;
      const pending = guard([...c.args(pidFile)], { onStart: (pid) => (guardPid = pid) });
      await waitFor(async () => (await readFile(pidFile, 'utf8').then((s) => s.endsWith('\n'), () => false)) && guardPid > 0);
      const pids = (await readFile(pidFile, 'utf8')).trim().split(' ').map(Number);
      try {
        if (c.how === 'signal') process.kill(guardPid, 'SIGTERM');
        // The guard ends, and nothing of the command is left running (what is left would hold the guard's stderr
        // open, so the guard's exit is watched by its pid).
        await waitFor(async () => !alive(guardPid));
        await waitFor(async () => !pids.some(alive));
      } finally {
        for (const pid of [guardPid, ...pids].filter(alive)) process.kill(pid, 'SIGKILL');
      }
      const ran = await pending;
      expect([i, ran.signal, ran.code]).toEqual([i, 'SIGTERM', null]);
    }
  }, 30_000);

  it('gives a stopped command the --kill-grace (HOOKWATCH_GUARD_KILL_GRACE) to flush before SIGKILL, a second by default', async () => {
    const fs = `require('fs')`;
    // On SIGTERM the command takes 1.5 s to flush what it holds, then ends.
    const flushing = (marker: string): string[] =>
      ['--timeout', '1', ...nodeHook(`process.on('SIGTERM',()=>setTimeout(()=>{${fs}.writeFileSync(${JSON.stringify(marker)},'flushed');process.exit(0)},1500));setInterval(()=>{},1000)`)];
    const cases: [string, string[], NodeJS.ProcessEnv, string | undefined][] = [
      ['default', [], {}, undefined],
      ['flag', ['--kill-grace', '5s'], { HOOKWATCH_GUARD_KILL_GRACE: '100ms' }, 'flushed'],
      ['variable', [], { HOOKWATCH_GUARD_KILL_GRACE: '5000ms' }, 'flushed'],
    ];
    for (const [name, flags, env, flushed] of cases) {
      const marker = join(dir, `flushed-${name}`);
      const ran = await guard([...flags, ...flushing(marker)], { env });
      // A stopped run never ends as a success: by the stop signal, flushed or killed.
      expect([name, ran.signal, ran.stderr, await readFile(marker, 'utf8').catch(() => undefined)]).toEqual([name, 'SIGTERM', '', flushed]);
    }
  }, 20_000);

  it('gives a hook file the --kill-grace to flush on a stop signal, run as the shell\'s child or with exec', async () => {
    // A settings-file command line runs under sh -c: dash runs a lone hook file as its child and ends at once on
    // the stop signal, which reaches the hook all the same; exec makes the shell the hook.
    for (const [i, line] of [(f: string) => shellQuote(f), (f: string) => `exec ${shellQuote(f)}`].entries()) {
      const ready = join(dir, `flush-ready-${i}`);
      const hook = join(dir, `flush-${i}.sh`);
      await writeFile(hook, `#!/bin/sh\ntrap 'sleep 1.5; printf flushed; exit 0' TERM\nprintf 'started '\necho $$ > '${ready}'\nwhile :; do sleep 0.1; done\n`);
      await chmod(hook, 0o755);
      let guardPid = 0;
      const pending = guard(['--kill-grace', '5s', '--', line(hook)], { onStart: (pid) => (guardPid = pid), killAfterMs: 15_000 });
      await waitFor(async () => (await readFile(ready, 'utf8').then((s) => s.endsWith('\n'), () => false)) && guardPid > 0);
      process.kill(guardPid, 'SIGTERM');
      // A hook left running would hold the guard's stdout open: the guard's exit is watched by its pid.
      const hookPid = Number(await readFile(ready, 'utf8'));
      await waitFor(async () => !alive(guardPid)).finally(() => alive(hookPid) && process.kill(hookPid, 'SIGKILL'));
      const ran = await pending;
      expect([line(hook), ran.stdout.toString(), ran.signal]).toEqual([line(hook), 'started flushed', 'SIGTERM']);
    }
  }, 30_000);

  it('stops a hook file the shell runs as its child with one stop signal, and kills it and what it started after the kill grace', async () => {
    // Under dash, sh -c runs a lone hook file as its child and ends at once on SIGTERM. The hook notes each TERM
    // it gets and runs on, with a `sleep 60` child (started again when one ends), writing "<itself> <its child>".
    const cases = [{ how: 'signal', flags: [] }, { how: 'timeout', flags: ['--timeout', '1'] }] as const;
    for (const c of cases) {
      const hook = join(dir, `stop-all-${c.how}.sh`);
      await writeFile(hook, `#!/bin/sh\ntrap 'echo TERM >> "$0.terms"; printf "stopped "' TERM\nprintf 'started '\nwhile :; do sleep 60 & echo $$ $! >> "$0.pids"; wait $!; done\n`);
      await chmod(hook, 0o755);
      let guardPid = 0;
      const pending = guard([...c.flags, '--', hook], { onStart: (pid) => (guardPid = pid), killAfterMs: 15_000 });
      await waitFor(async () => (await readFile(`${hook}.pids`, 'utf8').then((s) => s.endsWith('\n'), () => false)) && guardPid > 0);
      if (c.how === 'signal') process.kill(guardPid, 'SIGTERM');
      // What is left of the hook would hold the guard's stdout open: the guard's exit is watched by its pid.
      await waitFor(async () => !alive(guardPid));
      const pids = (await readFile(`${hook}.pids`, 'utf8')).trim().split(/\s+/).map(Number);
      try {
        // The guard has ended, the kill grace over: nothing of the hook is left running.
        expect([c.how, ...pids.filter(alive)]).toEqual([c.how]);
      } finally {
        for (const pid of pids.filter(alive)) process.kill(pid, 'SIGKILL');
      }
      const ran = await pending;
      // One TERM: a second one is "kill now" to many programs. What the hook wrote on it is delivered.
      expect([c.how, await readFile(`${hook}.terms`, 'utf8').catch(() => ''), ran.stdout.toString(), ran.signal]).toEqual([c.how, 'TERM\n', 'started stopped ', 'SIGTERM']);
    }
  }, 30_000);

  it('at a terminal, keeps the command on it: it can prompt there, Ctrl-C reaches it once, and what is left is killed after the grace', async () => {
    // A hook file the shell runs as its child; it writes to the terminal (as a hook prompting there would), notes
    // each SIGINT, outlives the terminal's hangup, and runs on with a child, writing "<itself> <its child>".
    const hook = join(dir, 'ctrl-c.sh');
    await writeFile(hook, `#!/bin/sh\ntrap 'echo INT >> "$0.ints"; printf "stopped "' INT\ntrap '' HUP\nprintf 'asked on the terminal ' > /dev/tty\nprintf 'started '\nwhile :; do sleep 60 & echo $$ $! >> "$0.pids"; wait $!; done\n`);
    await chmod(hook, 0o755);
    const terminal = atTerminal(hook);
    let pids: number[] = [];
    try {
      await waitFor(async () => (pids = await terminal.started()).length > 0);
      terminal.process.stdin.write('\x03');
      // The guard ends by the terminal's SIGINT (script says 130) once the grace is over, and the hook with it.
      expect(await terminal.ended).toBe(130);
      pids = await terminal.started();
      expect(pids.filter(alive)).toEqual([]);
      expect([await readFile(`${hook}.ints`, 'utf8').catch(() => ''), terminal.screen()]).toEqual(['INT\n', expect.stringMatching(/^asked on the terminal .*started stopped /s)]);
    } finally {
      for (const pid of pids.filter(alive)) process.kill(pid, 'SIGKILL');
      terminal.process.kill('SIGKILL');
    }
  }, 20_000);

  it('at a terminal, passes a SIGTERM sent to the guard alone on to all the command runs, once, and kills what is left after the grace', async () => {
    // `kill <guard>` reaches the guard alone, not the terminal's foreground group (a SIGHUP is not passed on: a
    // terminal's hangup reaches that group already, and a second one may kill at once). The hook file (the shell's child)
    // notes each signal and runs on, starting another `sleep 60` child each time its wait ends, writing "<itself>
    // <its child>". All outlive the terminal's hangup as the guard ends: only the guard can have killed them.
    for (const [signal, name] of [['SIGTERM', 'TERM']] as const) {
      const hook = join(dir, `at-terminal-${name}.sh`);
      await writeFile(hook, `#!/bin/sh\ntrap '' HUP\ntrap 'echo ${name} >> "$0.signals"; printf "stopped "' ${name}\nprintf 'started '\nwhile :; do (trap '' HUP; exec sleep 60) & echo $$ $! >> "$0.pids"; wait $!; done\n`);
      await chmod(hook, 0o755);
      const terminal = atTerminal(hook);
      let pids: number[] = [];
      try {
        await waitFor(async () => (pids = await terminal.started()).length > 0);
        // script's one child is the guard (its shell exec'd it).
        const [guardPid] = descendants(terminal.process.pid ?? 0);
        process.kill(guardPid ?? 0, signal);
        // The guard ends by the signal (script says 128 + its number) once the grace is over: nothing of the hook
        // runs then, the children it started after the signal included.
        expect([signal, await terminal.ended]).toEqual([signal, 128 + (constants.signals[signal] ?? 0)]);
        pids = await terminal.started();
        expect([signal, ...pids.filter(alive)]).toEqual([signal]);
        expect([signal, await readFile(`${hook}.signals`, 'utf8').catch(() => ''), terminal.screen()]).toEqual([signal, `${name}\n`, expect.stringMatching(/started stopped /)]);
      } finally {
        for (const pid of pids.filter(alive)) process.kill(pid, 'SIGKILL');
        terminal.process.kill('SIGKILL');
      }
    }
  }, 30_000);

  it('kills a stopped command that ignores the stop signal at once on a second stop signal, without waiting out the grace period', async () => {
    const fs = `require('fs')`;
    // Each command, and a child it starts, ignore SIGTERM and SIGINT; it writes "<its pid> <the child's pid>" once both do.
    const cases = [
      { signal: 'SIGTERM', args: (f: string) => ['--', `trap '' TERM INT; sleep 60 & echo $$ $! > ${f}; wait`] },
      { signal: 'SIGINT', args: (f: string) => nodeHook(`for(const s of ['SIGTERM','SIGINT'])process.on(s,()=>{});const c=require('child_process').spawn('sh',['-c',"trap '' TERM INT; echo; exec sleep 60"],{stdio:['ignore','pipe','ignore']});c.stdout.once('data',()=>${fs}.writeFileSync(${JSON.stringify(f)},process.pid+' '+c.pid+'\\n'));setInterval(()=>{},1000)`) },
    ] as const;
    for (const [i, c] of cases.entries()) {
      const pidFile = join(dir, `second-signal-${i}.pid`);
      let guardPid = 0;
      // A grace period far longer than the test waits: only the second signal can end the command in time.
      const pending = guard([...c.args(pidFile)], { onStart: (pid) => (guardPid = pid), env: { HOOKWATCH_GUARD_KILL_GRACE: '1m' } });
      await waitFor(async () => (await readFile(pidFile, 'utf8').then((s) => s.endsWith('\n'), () => false)) && guardPid > 0);
      const pids = (await readFile(pidFile, 'utf8')).trim().split(' ').map(Number);
      try {
        process.kill(guardPid, c.signal);
        // Past the default grace period of a second, the command still runs: the first signal waits out the grace.
        await new Promise((r) => setTimeout(r, 1_500));
        expect([i, alive(guardPid), ...pids.map(alive)]).toEqual([i, true, true, true]);
        const second = performance.now();
        process.kill(guardPid, c.signal);
        await waitFor(async () => !alive(guardPid) && !pids.some(alive));
        expect(performance.now() - second).toBeLessThan(5_000);
      } finally {
        for (const pid of [guardPid, ...pids].filter(alive)) process.kill(pid, 'SIGKILL');
      }
      const ran = await pending;
      expect([i, ran.signal, ran.code]).toEqual([i, c.signal, null]);
    }
  }, 30_000);

  it('runs a hook file whose path holds a space, given as the shell expanded it or quoted for the guard\'s shell', async () => {
    const project = join(dir, 'sp ace');
    const hooks = join(project, '.claude', 'hooks');
    await mkdir(hooks, { recursive: true });
    await writeFile(join(hooks, 'session-brief.sh'), `#!/bin/sh\nprintf 'brief of %s\\n' "$CLAUDE_PROJECT_DIR"\n`);
    // A hook file without a #! line runs too, as the shell runs it without the guard.
    await writeFile(join(hooks, 'plain.sh'), `echo plain`);
    for (const name of ['session-brief.sh', 'plain.sh']) await chmod(join(hooks, name), 0o755);
    const guardCall = `${shellQuote(process.execPath)} ${shellQuote(BIN)} guard`;
    const env = { CLAUDE_PROJECT_DIR: project };
    // Written by hand, the path is expanded by Claude Code's shell: the guard gets one word with a space in it.
    const expanded = await hookLine(`${guardCall} -- "$CLAUDE_PROJECT_DIR"/.claude/hooks/session-brief.sh`, { env });
    expect([expanded.code, expanded.stdout.toString(), expanded.stderr]).toEqual([0, `brief of ${project}\n`, '']);
    // As --install writes it, the guard's shell expands it.
    const quoted = await hookLine(`${guardCall} -- '"$CLAUDE_PROJECT_DIR"/.claude/hooks/session-brief.sh'`, { env });
    expect([quoted.code, quoted.stdout.toString(), quoted.stderr]).toEqual([0, `brief of ${project}\n`, '']);
    const plain = await hookLine(`${guardCall} -- "$CLAUDE_PROJECT_DIR"/.claude/hooks/plain.sh`, { env });
    expect([plain.code, plain.stdout.toString(), plain.stderr]).toEqual([0, 'plain\n', '']);
    // A word that is not a file stays a command line.
    const line = await hookLine(`${guardCall} -- 'echo "$CLAUDE_PROJECT_DIR" | tr a-z A-Z'`, { env });
    expect(line.stdout.toString()).toBe(`${project.toUpperCase()}\n`);
  });

  it('reports a command that cannot start, and bad usage, with clear messages', async () => {
    const missing = await guard(['--', join(dir, 'no-such-hook'), 'arg']);
    expect(missing.code).toBe(127);
    expect(missing.stderr).toContain('cannot run');
    // A file that is there but cannot be run is 126, as sh, env and timeout say: not 127, "no such command".
    const notExecutable = join(dir, 'not-executable.sh');
    await writeFile(notExecutable, 'echo ran\n', { mode: 0o644 });
    const denied = await guard(['--', notExecutable, 'arg']);
    expect([denied.code, denied.stdout.toString()]).toEqual([126, '']);
    expect(denied.stderr).toContain(`cannot run ${notExecutable}`);
    expect((await hookLine(`${shellQuote(notExecutable)} arg`)).code).toBe(126);
    // Nothing to run: exit 1, which Claude Code shows the user without blocking the tool call (2 would block it).
    const noDash = await guard(['./hook.sh']);
    expect(noDash.code).toBe(1);
    expect(noDash.stderr).toContain('put the hook command after "--"');
    // A command begun before "--" (no flag's value stands there): what follows "--" is only the rest of it, its
    // arguments, and is not run as a command of its own (here it would write the file).
    const written = join(dir, 'rest-of-the-command');
    for (const flags of [['echo'], ['--timeout', '30', 'echo'], ['--timeout', '30', 's', 'echo'], ['--help', 'echo'], ['--bugdet', '3000', 'echo']]) {
      const split = await guard([...flags, '--', process.execPath, '-e', `require('fs').writeFileSync(${JSON.stringify(written)}, 'ran')`]);
      expect([split.code, split.stdout.toString()], flags.join(' ')).toEqual([1, '']);
      expect(split.stderr, flags.join(' ')).toContain(`put the hook command after "--": hookwatch guard -- echo ${process.execPath} -e`);
      await expect(stat(written), flags.join(' ')).rejects.toThrow(/ENOENT/);
    }
    // At a terminal (--install), an unknown flag is a usage error: exit 2, nothing written.
    const install = await guard(['--install', 'settings.json', '--bugdet', '3000']);
    expect(install.code).toBe(2);
    expect(install.stderr).toContain('unknown flag --bugdet (did you mean --budget?)');
  });

  it('never stops the hook over its own settings: each mistake is named, keeps its default, and the command runs', async () => {
    const hook = nodeHook(`process.stderr.write('RAN');process.stdout.write('line of the hook\\n'.repeat(800))`);
    const cases: [string[], NodeJS.ProcessEnv, string][] = [
      [['--budget', 'lots'], {}, '--budget: expected a whole number from 500 to 10000, got "lots"; the default is used (strings of up to 10,000 characters left whole, longer ones cut to 9,500)'],
      [['--budget', '20000'], {}, '--budget: expected a whole number from 500 to 10000, got "20000"; the default is used (strings of up to 10,000 characters left whole, longer ones cut to 9,500)'],
      [[], { HOOKWATCH_GUARD_BUDGET: '9.5k' }, 'HOOKWATCH_GUARD_BUDGET: expected a whole number from 500 to 10000, got "9.5k"'],
      [[], { HOOKWATCH_GUARD_REPORT: 'hookwatch:4318' }, 'HOOKWATCH_GUARD_REPORT: expected an http(s) URL, got "hookwatch:4318"; trims are not reported'],
      [['--timeout', 'soon'], {}, '--timeout: expected a whole number from 1 to 2147483, got "soon"; the command runs without the guard\'s own timeout'],
      // Past what a timer holds (2^31 - 1 ms), a timeout would fire at once and stop the hook before it ran.
      [['--timeout', '2147484'], {}, '--timeout: expected a whole number from 1 to 2147483, got "2147484"; the command runs without the guard\'s own timeout'],
      [['--keep-for', '7'], {}, '--keep-for: expected a duration of at least 1h such as 7d or 36h, got "7"; saved outputs are kept for the default 7d'],
      [[], { HOOKWATCH_GUARD_KEEP_FOR: '10m' }, 'HOOKWATCH_GUARD_KEEP_FOR: expected a duration of at least 1h such as 7d or 36h, got "10m"'],
      [['--kill-grace', '5'], {}, '--kill-grace: expected a duration from 1ms to 1m such as 5s or 1500ms, got "5"; a stopped command is killed after the default 1s'],
      [['--kill-grace', '0s'], {}, '--kill-grace: expected a duration from 1ms to 1m such as 5s or 1500ms, got "0s"'],
      [[], { HOOKWATCH_GUARD_KILL_GRACE: '2m' }, 'HOOKWATCH_GUARD_KILL_GRACE: expected a duration from 1ms to 1m such as 5s or 1500ms, got "2m"'],
      // A fraction of a millisecond was rounded (1.5ms to 2ms) without a word.
      [[], { HOOKWATCH_GUARD_KILL_GRACE: '1.5ms' }, 'HOOKWATCH_GUARD_KILL_GRACE: expected a duration from 1ms to 1m such as 5s or 1500ms, got "1.5ms"'],
      [[], { HOOKWATCH_GUARD_KEEP_SIZE: 'lots' }, 'HOOKWATCH_GUARD_KEEP_SIZE: expected a size such as 1GiB or 500MB, got "lots"; saved outputs are kept up to the default 1GiB'],
      [[], { HOOKWATCH_GUARD_KEEP_SIZE: '1.3KiB' }, 'HOOKWATCH_GUARD_KEEP_SIZE: expected a size such as 1GiB or 500MB, got "1.3KiB"'],
      [['--bugdet', '3000'], {}, 'unknown flag --bugdet (did you mean --budget?); ignored, the command runs'],
      [['--command', 'hookwatch guard --timeout 5'], {}, '--command is for --install and --uninstall; ignored, the command runs'],
      [['--help'], {}, '--help with a command to run; ignored, the command runs ("hookwatch guard --help" prints the help)'],
      // A value written with a space in it: the hook ran nowhere, the guard ended with 1 (a blocking hook no longer blocked).
      [['--timeout', '30', 's'], {}, 'unexpected argument "s" before "--"; ignored, the command runs'],
      [['--kill-grace', '1500', 'ms', '--timeout', '30', 's'], {}, 'unexpected arguments "ms" "s" before "--"; ignored, the command runs'],
      [['--keep-size', '2', 'MiB'], {}, 'unexpected argument "MiB" before "--"; ignored, the command runs'],
    ];
    for (const [flags, env, message] of cases) {
      const ran = await guard([...flags, ...hook], { env });
      const label = JSON.stringify([flags, env]);
      expect(ran.code, label).toBe(0);
      expect(ran.stderr, label).toContain('RAN');
      expect(ran.stderr, label).toContain(message);
      // 13,600 characters, over the cap: trimmed at the default budget.
      const out = ran.stdout.toString();
      expect(out.length, label).toBeLessThanOrEqual(9_500);
      expect(out.length, label).toBeGreaterThan(9_000);
    }
  });

  it('keeps the stderr of a hook that blocks (exit 2) exactly the command\'s: its own warnings come after, and not then', async () => {
    const hook = nodeHook(`process.stderr.write('why');process.exitCode=Number(process.env.EXIT)`);
    for (const [flags, env] of [[['--bugdet', '3000'], {}], [[], { HOOKWATCH_GUARD_BUDGET: '20000' }], [['--timeout', '30', 's'], {}]] as const) {
      const label = JSON.stringify([flags, env]);
      const blocked = await guard([...flags, ...hook], { env: { ...env, EXIT: '2' } });
      expect([blocked.code, blocked.stderr], label).toEqual([2, 'why']);
      const failed = await guard([...flags, ...hook], { env: { ...env, EXIT: '1' } });
      expect(failed.code, label).toBe(1);
      expect(failed.stderr, label).toMatch(/^whyhookwatch guard: .+; (ignored, the command runs|the default is used \(strings of up to 10,000 characters left whole, longer ones cut to 9,500\))\n$/s);
    }
  });

  it('keeps Node\'s warnings that type stripping and SQLite are experimental off the stderr of the hook, and no other warning', async () => {
    // Node 24.0 to 24.2, which the engines range takes, warn so on stderr as the first .ts module loads; this
    // preload does what they do at that point, under the Node the tests run on (and warns of $ALSO too).
    const preload = await experimentalWarningsPreload(dir);
    const run = (args: string[], env: NodeJS.ProcessEnv = {}): Promise<Ran> => spawnHook(process.execPath, ['--import', preload, BIN, 'guard', ...args], { env });
    const blocked = await run(nodeHook(`process.stderr.write('why');process.exit(2)`));
    expect([blocked.code, blocked.stderr]).toEqual([2, 'why']);
    const other = await run(nodeHook(`process.stderr.write('why')`), { ALSO: 'Something else is an experimental feature' });
    expect(other.code).toBe(0);
    expect(other.stderr).toContain('Something else is an experimental feature');
    expect(other.stderr).not.toContain('Type Stripping');
    expect(other.stderr).not.toContain('SQLite is');
  });

  it('passes the output through unchanged when the full output cannot be saved, rather than point at nothing', async () => {
    const blocker = join(dir, 'not-a-folder');
    await writeFile(blocker, 'x');
    const ran = await guard(['--dir', join(blocker, 'sub'), '--', '/bin/sh', '-c', `head -c 12000 /dev/zero | tr '\\0' q`]);
    expect(ran.code).toBe(0);
    expect(ran.stdout.toString()).toBe('q'.repeat(12_000));
    expect(ran.stderr).toContain('cannot save the full output');
    const spilled = await guard(['--dir', join(blocker, 'sub'), '--', '/bin/sh', '-c', `head -c 3000000 /dev/zero | tr '\\0' q`], { env: { HOOKWATCH_GUARD_SPILL_BYTES: String(1024 * 1024) } });
    expect(spilled.stdout.length).toBe(3_000_000);
  });

  it('passes an output too large to hold straight on when it cannot be saved, in bounded memory, its exit status and blocking stderr kept', async () => {
    // 200 MB, far past the 8 MiB held in memory: a folder others may write in, or one that cannot be made, takes
    // no file, and what the guard held and all that follows goes straight to stdout, as written.
    const open = join(dir, 'unsaveable-open');
    await mkdir(open);
    await chmod(open, 0o777);
    const rssFile = join(dir, 'guard-max-rss');
    const preload = await writePreload(dir, 'max-rss.mjs', [
      "import { writeFileSync } from 'node:fs';",
      `process.on('exit', () => writeFileSync(${JSON.stringify(rssFile)}, String(process.resourceUsage().maxRSS * 1024)));`,
    ]);
    const bytes = 200_000_000;
    const as = Buffer.alloc(1024 * 1024, 'a');
    for (const [args, code] of [[['--dir', open], 2], [['--dir', '/proc/nope'], 0]] as const) {
      const label = `${args[1]} exit ${code}`;
      let delivered = 0;
      let unchanged = true;
      await rm(rssFile, { force: true });
      const line = `head -c ${bytes} /dev/zero | tr '\\0' a; echo "blocked: reason" >&2; exit ${code}`;
      const ran = await spawnHook(process.execPath, ['--import', preload, BIN, 'guard', ...args, '--', line], {
        killAfterMs: 120_000,
        onStdout: (chunk) => {
          delivered += chunk.length;
          unchanged &&= chunk.length <= as.length && chunk.equals(as.subarray(0, chunk.length));
        },
      });
      expect([ran.code, ran.signal], label).toEqual([code, null]);
      expect([delivered, unchanged], label).toEqual([bytes, true]);
      // The stderr of a command that blocks stays exactly its own; else one line says the output was not saved.
      if (code === 2) expect(ran.stderr, label).toBe('blocked: reason\n');
      else expect(ran.stderr, label).toMatch(/^blocked: reason\nhookwatch guard: cannot save the full output in \/proc\/nope \([^\n]+\); output passed through unchanged\n$/);
      // Held whole, the output alone would take 200 MB. Node itself takes some 60, and the buffers written on
      // wait for its garbage collector a while.
      expect(Number(await readFile(rssFile, 'utf8')), label).toBeLessThan(180 * 1024 * 1024);
    }
    expect(await readdir(open)).toEqual([]);
  }, 300_000);

  it('ends with the command\'s own exit status when the output cannot be delivered, its blocking stderr exactly its own', async () => {
    // The hook removes the file its output was spilled to: there is nothing left to pass on.
    const folder = join(dir, 'vanishing-spill');
    await mkdir(folder, { mode: 0o700 });
    for (const code of [2, 3]) {
      const line = `head -c 3000000 /dev/zero | tr '\\0' v; rm -f ${shellQuote(folder)}/*-spill.txt; echo why >&2; exit ${code}`;
      const ran = await guard(['--dir', folder, '--', line], { env: { HOOKWATCH_GUARD_SPILL_BYTES: String(1024 * 1024) } });
      expect([ran.code, ran.signal], String(code)).toEqual([code, null]);
      if (code === 2) expect(ran.stderr).toBe('why\n');
      else expect(ran.stderr).toMatch(/^why\nhookwatch guard: cannot deliver the output \(ENOENT[^\n]*\)\n$/);
    }
  });

  it('never saves into a folder others may write in, or one another user made first in a shared tmp: the output passes through', async () => {
    const line = `head -c 12000 /dev/zero | tr '\\0' q`;
    // Another user could replace a saved output there, and so choose what the model reads.
    const open = join(dir, 'open-to-all');
    await mkdir(open);
    await chmod(open, 0o777);
    const ran = await guard(['--dir', open, '--', line]);
    expect(ran.code).toBe(0);
    expect(ran.stdout.toString()).toBe('q'.repeat(12_000));
    expect(ran.stderr).toContain(`cannot save the full output in ${open} (${open} can be written by other users (mode 777)`);
    expect(await readdir(open)).toEqual([]);

    // The default folder, $TMPDIR/hookwatch-guard-<uid>, made beforehand by another user (who can make it only
    // where a root-run test can hand it over).
    if (process.getuid?.() === 0) {
      const shared = join(dir, 'shared-tmp');
      await mkdir(shared);
      await chmod(shared, 0o1777);
      const squatted = join(shared, 'hookwatch-guard-0');
      await mkdir(squatted, { mode: 0o700 });
      await chown(squatted, 65534, 65534);
      const spilled = await guard(['--', line], { env: { TMPDIR: shared, HOOKWATCH_GUARD_DIR: '' } });
      expect(spilled.stdout.toString()).toBe('q'.repeat(12_000));
      expect(spilled.stderr).toContain(`(${squatted} belongs to another user (uid 65534)`);
      expect(await readdir(squatted)).toEqual([]);
    }
  });

  it('never hangs on a folder for the full output that cannot be made (under /proc): the output passes through', async () => {
    const line = `head -c 12000 /dev/zero | tr '\\0' q`;
    for (const [args, env] of [[['--dir', '/proc/nope'], {}], [[], { HOOKWATCH_GUARD_DIR: '/proc/nope/deeper' }]] as const) {
      const ran = await guard([...args, '--', line], { env, killAfterMs: 5_000 });
      expect([ran.signal, ran.code], JSON.stringify(args)).toEqual([null, 0]);
      expect(ran.stdout.toString()).toBe('q'.repeat(12_000));
      expect(ran.stderr).toContain('hookwatch guard: cannot save the full output in /proc/nope');
    }
  });

  it('keeps a JSON output larger than memory holds valid JSON, its decision and fields intact, however much white space surrounds it', async () => {
    const make = `({ hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', additionalContext: 'x '.repeat(1_500_000) }, suppressOutput: true })`;
    const payload = { hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', additionalContext: 'x '.repeat(1_500_000) }, suppressOutput: true };
    // White space around the object is still one JSON object to Claude Code: a long run of it must not make it text.
    for (const [before, after] of [[0, 0], [0, 50_000], [50_000, 0]]) {
      const ran = await guard(nodeHook(`process.stdout.write(' \\n'.repeat(${before}) + JSON.stringify(${make}) + ' \\n'.repeat(${after}))`), { env: { HOOKWATCH_GUARD_SPILL_BYTES: String(1024 * 1024) } });
      expect(ran.code).toBe(0);
      const out = JSON.parse(ran.stdout.toString()) as typeof payload;
      expect(out.hookSpecificOutput.permissionDecision, `${before} white space lines before, ${after} after`).toBe('deny');
      expect(out.suppressOutput).toBe(true);
      expect(out.hookSpecificOutput.additionalContext.length).toBeLessThanOrEqual(9_500);
      const path = /the full output is in (\S+)\]$/.exec(out.hookSpecificOutput.additionalContext)?.[1] ?? '';
      expect(await readFile(path, 'utf8')).toBe(payload.hookSpecificOutput.additionalContext);
    }
  });

  it('takes as white space around a JSON output what Claude Code trims before JSON.parse, held in memory or spilled alike', async () => {
    // JSON.parse takes space, tab, CR and LF only around a value, but the output is trimmed first (String.prototype
    // .trim, as Claude Code and hookwatch check do): U+3000, U+2028, NBSP and a byte order mark go too; NEL
    // (U+0085) is white space to neither, and leaves the output plain text. 50,000 U+3000 span 64 KiB blocks of the file.
    const cases: [space: string, times: number, where: 'before' | 'after', json: boolean][] = [
      ['\u3000', 1, 'after', true], ['\u2028', 1, 'after', true], ['\u00a0', 1, 'after', true], ['\ufeff', 1, 'after', true],
      ['\u3000', 50_000, 'after', true], ['\u3000', 50_000, 'before', true], ['\u0085', 1, 'after', false], ['\u0085', 1, 'before', false],
    ];
    // 15,000 characters of additionalContext are held in memory; 3,000,000 are spilled past 1 MiB.
    for (const pairs of [7_500, 1_500_000]) {
      const make = `({ hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', additionalContext: 'x '.repeat(${pairs}) } })`;
      for (const [space, times, where, json] of cases) {
        const label = `${pairs * 2} characters, ${times} U+${space.codePointAt(0)?.toString(16).padStart(4, '0')} ${where}`;
        const around = `process.env.SPACE.repeat(${times})`;
        const write = where === 'before' ? `${around} + JSON.stringify(${make})` : `JSON.stringify(${make}) + ${around}`;
        const ran = await guard(nodeHook(`process.stdout.write(${write})`), { env: { SPACE: space, HOOKWATCH_GUARD_SPILL_BYTES: String(1024 * 1024) } });
        expect(ran.code, label).toBe(0);
        const out = ran.stdout.toString();
        if (!json) {
          // Plain text, cut as such, as hookwatch check measures it.
          expect(out.length, label).toBeLessThanOrEqual(9_500);
          expect(() => JSON.parse(out.trim()) as unknown, label).toThrow();
          expect(out, label).toMatch(/\n\[hookwatch guard: [\d,]+ more characters left out; the full output is in \S+\]$/);
          continue;
        }
        // Still one JSON object, its decision intact and only additionalContext cut; the white space stays as written.
        expect(() => JSON.parse(out.trim()) as unknown, label).not.toThrow();
        const parsed = JSON.parse(out.trim()) as { hookSpecificOutput: { permissionDecision: string; additionalContext: string } };
        expect(parsed.hookSpecificOutput.permissionDecision, label).toBe('deny');
        expect(parsed.hookSpecificOutput.additionalContext.length, label).toBeLessThanOrEqual(9_500);
        expect(out.length, label).toBeLessThan(10_000 + times);
        expect(where === 'before' ? out.startsWith(space.repeat(times)) : out.endsWith(space.repeat(times)), label).toBe(true);
      }
    }
  });

  it('trims a large JSON Lines output as text: only a whole object is read back to be parsed', async () => {
    // 10 MB, past what the guard parses at this spill size (8 MiB): taken for one object it would pass whole.
    const ran = await guard(nodeHook(`for (let i = 0; i < 160000; i++) process.stdout.write(JSON.stringify({ line: i, text: 'x'.repeat(40) }) + '\\n')`), { env: { HOOKWATCH_GUARD_SPILL_BYTES: String(1024 * 1024) } });
    const out = ran.stdout.toString();
    expect(ran.code).toBe(0);
    expect(out.length).toBeLessThanOrEqual(9_500);
    expect(out.startsWith('{"line":0,')).toBe(true);
    expect(out).toMatch(/more characters left out; the full output is in \S+-spill\.txt\]$/);
    expect(ran.stderr).toBe('');
  });

  it('saves the full plain output as the bytes the command wrote, invalid UTF-8 included', async () => {
    const ran = await guard(nodeHook(`process.stdout.write(Buffer.concat(Array.from({length: 2_000}, (_, i) => Buffer.from([0x61 + (i % 26), 0xff, 0xfe, 0x0a, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67]))))`));
    const out = ran.stdout.toString();
    expect(ran.code).toBe(0);
    const path = /the full output is in (\S+)\]$/.exec(out)?.[1] ?? '';
    const full = await readFile(path);
    expect(full.length).toBe(20_000);
    expect(full.subarray(0, 4)).toEqual(Buffer.from([0x61, 0xff, 0xfe, 0x0a]));
  });

  it('names the full output by an absolute path when --dir is relative', async () => {
    const ran = await guard(['--dir', 'relative-out', '--', `head -c 12000 /dev/zero | tr '\\0' r`]);
    const path = /the full output is in (\S+)\]$/.exec(ran.stdout.toString())?.[1] ?? '';
    expect(path.startsWith(join(dir, 'relative-out'))).toBe(true);
    expect((await readFile(path, 'utf8')).length).toBe(12_000);
  });

  it('keeps a small budget with a long --dir: the pointer line leaves out a path that does not fit', async () => {
    const longDir = join(dir, 'a'.repeat(200), 'b'.repeat(200), 'c'.repeat(200));
    const ran = await guard(['--budget', '500', '--dir', longDir, '--', `for i in $(seq 1 300); do echo "line $i"; done`]);
    const out = ran.stdout.toString();
    expect(ran.code).toBe(0);
    expect(out.length).toBeLessThanOrEqual(500);
    expect(out.startsWith('line 1\nline 2\n')).toBe(true);
    expect(out).toMatch(/\n\[hookwatch guard: [\d,]+ more characters left out; the full output is saved, its path is too long for the budget\]$/);
    // Saved all the same, where --dir says.
    const [saved] = await readdir(longDir);
    expect((await readFile(join(longDir, saved ?? ''), 'utf8')).startsWith('line 1\n')).toBe(true);
  });

  it('passes a spilled output with nothing to trim through whole, from its file, and keeps no copy', async () => {
    // Past a small HOOKWATCH_GUARD_SPILL_BYTES only the output's head is held in memory: one within the default
    // budget, and one over it but within the cap, which the default leaves whole.
    for (const chars of [9_800, 5_000]) {
      const file = join(dir, `spilled-${chars}.out`);
      await writeFile(file, `${'spilled line\n'.repeat(chars / 10)}`.slice(0, chars));
      const folder = join(dir, `spilled-${chars}`);
      const ran = await guard(['--dir', folder, '--', '/bin/cat', file], { env: { HOOKWATCH_GUARD_SPILL_BYTES: '1024' } });
      expect(ran.code, String(chars)).toBe(0);
      expect(ran.stdout.equals(await readFile(file)), String(chars)).toBe(true);
      expect(await readdir(folder), String(chars)).toEqual([]);
    }
  });

  it('cuts between two whole characters wherever the cut falls, keeping all that fits: plain or JSON, held in memory or spilled', async () => {
    // Text of one character repeated (an emoji, a letter and its mark, a flag, a family joined by ZWJ, a skin
    // tone, a Thai letter and its vowel sign SARA AM, a Malayalam dot reph and the letter it stands on) after 0 to
    // length-1 letters: whatever the pointer line leaves for the front, one run has a character straddling the cut
    // at each of its code units. No space or line break: the cut is a hard one.
    const folder = join(dir, 'saved-😀');
    const wellFormed = (bytes: Buffer, label: string): string => {
      const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
      // A lone surrogate written to a pipe arrives as U+FFFD, which the hook never printed.
      expect(text.includes('\ufffd'), label).toBe(false);
      return text;
    };
    const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
    const pointer = /\n\[hookwatch guard: ([\d,]+) more characters left out; the full output is in (.+)\]$/u;
    const kinds = [
      ['plain', (text: string) => text, (out: string) => out],
      ['json', (text: string) => `{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": ${JSON.stringify(text)}}}\n`, (out: string) => (JSON.parse(out) as { hookSpecificOutput: { additionalContext: string } }).hookSpecificOutput.additionalContext],
    ] as const;
    for (const cluster of ['😀', 'e\u0301', '🇯🇵', '👨\u200d👩\u200d👧', '👍🏽', 'ก\u0e33', '\u0d4eക']) {
      for (let offset = 0; offset < cluster.length; offset++) {
        const text = `${'a'.repeat(offset)}${cluster.repeat(Math.ceil(12_000 / cluster.length))}`;
        for (const [kind, make, delivered] of kinds) {
          const file = join(dir, `cut-${kind}-${offset}.out`);
          await writeFile(file, make(text));
          // Held in memory whole, and spilled past 8 KiB (only the head kept in memory; a JSON output, up to 64 KiB,
          // read back to be parsed).
          for (const spill of [undefined, '8192']) {
            const label = `${JSON.stringify(cluster)} after ${offset} letters, ${kind}${spill === undefined ? '' : ' spilled'}`;
            const ran = await guard(['--dir', folder, '--', '/bin/cat', file], { env: spill === undefined ? {} : { HOOKWATCH_GUARD_SPILL_BYTES: spill } });
            expect([ran.code, ran.stderr], label).toEqual([0, '']);
            const out = delivered(wellFormed(ran.stdout, label));
            expect(loneSurrogate.test(out), label).toBe(false);
            expect(out.length, label).toBeLessThanOrEqual(9_500);
            const match = pointer.exec(out);
            expect(match?.[2]?.startsWith(`${folder}/`), label).toBe(true);
            // As much as fits: the front is sized for the pointer line stating the whole length, then backs off
            // to the last whole character.
            const room = 9_500 - `[hookwatch guard: ${text.length.toLocaleString('en-US')} more characters left out; the full output is in ${match?.[2]}]`.length - 1;
            const whole = offset + Math.floor((room - offset) / cluster.length) * cluster.length;
            const front = out.slice(0, out.length - (match?.[0].length ?? 0));
            expect(front.length, label).toBe(whole);
            expect(text.startsWith(front), label).toBe(true);
            expect(match?.[1], label).toBe((text.length - whole).toLocaleString('en-US'));
          }
        }
      }
    }
  }, 240_000);

  it('ends a run stopped at its --timeout at once: an output too large to hold is cut to the budget, not written on in full', async () => {
    // 3,000,000 characters spilled past 1 MiB, then the hook hangs until the guard's timeout stops it.
    const started = Date.now();
    const ran = await guard(['--timeout', '1', '--', `head -c 3000000 /dev/zero | tr '\\0' y; sleep 30`], { env: { HOOKWATCH_GUARD_SPILL_BYTES: String(1024 * 1024) }, killAfterMs: 20_000 });
    expect([ran.code, ran.signal]).toEqual([null, 'SIGTERM']);
    expect(Date.now() - started).toBeLessThan(10_000);
    const out = ran.stdout.toString();
    expect(out.length).toBeLessThanOrEqual(9_500);
    expect(out.startsWith('yyyy')).toBe(true);
    expect(out).toContain('[hookwatch guard: 2,99');
    // The full output is where the pointer line says, as for any output cut.
    const path = /the full output is in (\S+)\]$/.exec(out)?.[1] ?? '';
    expect((await stat(path)).size).toBe(3_000_000);
    // Held in memory whole, a stopped run's output still passes through as written.
    const held = await guard(['--timeout', '1', '--', `head -c 30000 /dev/zero | tr '\\0' h; sleep 30`], { killAfterMs: 20_000 });
    expect([held.signal, held.stdout.toString()]).toEqual(['SIGTERM', 'h'.repeat(30_000)]);
  });

  it('holds no more than 8 MiB of an output in memory: a spill size that is no whole number up to that is named, and the default used', async () => {
    // 9,000,000 characters: past the default 8 MiB, so the full output is the file it was spilled to.
    const hook = ['--', `head -c 9000000 /dev/zero | tr '\\0' s`];
    for (const spill of ['1e20', '16777216', 'lots', '0']) {
      const ran = await guard(hook, { env: { HOOKWATCH_GUARD_SPILL_BYTES: spill } });
      expect(ran.code, spill).toBe(0);
      expect(ran.stderr, spill).toBe(`hookwatch guard: HOOKWATCH_GUARD_SPILL_BYTES: expected a whole number from 1 to 8388608, got "${spill}"; the default is used (an output past 8 MiB goes to a file)\n`);
      const path = /the full output is in (\S+)\]$/.exec(ran.stdout.toString())?.[1] ?? '';
      expect(basename(path), spill).toMatch(/-spill\.txt$/);
      expect((await stat(path)).size, spill).toBe(9_000_000);
    }
  });

  it('streams an output far larger than memory holds to a file and still delivers its front', async () => {
    const ran = await guard(['--', `head -c 20000000 /dev/zero | tr '\\0' 'a'`], { env: { HOOKWATCH_GUARD_SPILL_BYTES: String(1024 * 1024) } });
    const out = ran.stdout.toString();
    expect(out.length).toBeLessThanOrEqual(9_500);
    expect(out).toContain('[hookwatch guard: 19,99');
    const path = /the full output is in (\S+)\]$/.exec(out)?.[1] ?? '';
    expect((await stat(path)).size).toBe(20_000_000);
  });

  it('cuts the saved copy of an output at --keep-size (never under the 8 MiB held in memory), still counting all it printed', async () => {
    // A spill size of 1 MiB here, so that a 2 MiB cut is allowed and the test writes little.
    const env = { HOOKWATCH_GUARD_SPILL_BYTES: String(1024 * 1024) };
    const cutAt = 2 * 1024 * 1024;
    const pointer = /\n\[hookwatch guard: ([\d,]+) more characters left out; the first 2,097,152 bytes of the full output are in (\S+)\]$/;
    const count = (text: string | undefined): number => Number(text?.replace(/,/g, ''));
    // Cut as plain text whatever the exit status: a copy of the first 2 MiB cannot be passed on as written, nor
    // parsed as the JSON object it begins.
    const cases = [
      [['--keep-size', '2MiB', '--', `head -c 5000000 /dev/zero | tr '\\0' c`], {}, 0, 5_000_000],
      [['--', `head -c 5000000 /dev/zero | tr '\\0' c; exit 1`], { HOOKWATCH_GUARD_KEEP_SIZE: '2MiB' }, 1, 5_000_000],
      [['--keep-size', '2MiB', ...nodeHook(`process.stdout.write(JSON.stringify({ systemMessage: 'c'.repeat(3_000_000) }))`)], {}, 0, 3_000_020],
    ] as const;
    for (const [args, more, code, chars] of cases) {
      const label = JSON.stringify(args.slice(-1));
      const ran = await guard([...args], { env: { ...env, ...more } });
      expect([ran.code, ran.stderr], label).toEqual([code, '']);
      const out = ran.stdout.toString();
      expect(out.length, label).toBeLessThanOrEqual(9_500);
      const match = pointer.exec(out);
      expect(match, label).not.toBeNull();
      const front = out.slice(0, out.indexOf('\n[hookwatch guard:'));
      expect(count(match?.[1]), label).toBe(chars - front.length);
      const saved = await readFile(match?.[2] ?? '', 'utf8');
      expect(saved.length, label).toBe(cutAt);
      expect(saved.startsWith(front), label).toBe(true);
    }
    // A hook that prints without end fills no disk: `yes` until the guard's timeout stops it.
    const ran = await guard(['--timeout', '2', '--', 'yes'], { env: { ...env, HOOKWATCH_GUARD_KEEP_SIZE: '2MiB' }, killAfterMs: 30_000 });
    expect([ran.code, ran.signal]).toEqual([null, 'SIGTERM']);
    const match = pointer.exec(ran.stdout.toString());
    expect(count(match?.[1])).toBeGreaterThan(cutAt);
    expect((await stat(match?.[2] ?? '')).size).toBe(cutAt);
  });

  it('counts a spilled output in UTF-16 code units as Claude Code decodes it, emoji and invalid bytes split across reads included', async () => {
    // About 5 MB past a 1 MiB spill: ASCII, 2-, 3- and 4-byte characters and invalid sequences (a lone 0xff, an
    // emoji's first bytes left unfinished, a surrogate encoded in UTF-8), in runs of odd lengths, so that reads of
    // the pipe begin and end inside characters. Counted whole when saved, and past a --keep-size of 2 MiB.
    const pieces = [Buffer.from('plain ascii '.repeat(9_777)), Buffer.from('é€😀 ✓'.repeat(10_013)), Buffer.from([0xff]), Buffer.from('😀'.repeat(20_039)), Buffer.from([0xf0, 0x9f, 0x98]), Buffer.from('中文'.repeat(15_011)), Buffer.from([0xed, 0xa0, 0x80])];
    const bytes = Buffer.concat(Array.from({ length: 6 }, () => pieces).flat());
    const file = join(dir, 'mixed-output.bin');
    await writeFile(file, bytes);
    const chars = bytes.toString('utf8').length;
    const count = (text: string | undefined): number => Number(text?.replace(/,/g, ''));
    for (const keep of [[], ['--keep-size', '2MiB']]) {
      const ran = await guard([...keep, '--', `cat ${shellQuote(file)}`], { env: { HOOKWATCH_GUARD_SPILL_BYTES: String(1024 * 1024) } });
      expect([ran.code, ran.stderr], keep.join(' ')).toEqual([0, '']);
      const out = ran.stdout.toString();
      const match = /\n\[hookwatch guard: ([\d,]+) more characters left out; (?:the full output is|the first [\d,]+ bytes of the full output are) in \S+\]$/.exec(out);
      const front = out.slice(0, out.indexOf('\n[hookwatch guard:'));
      expect(count(match?.[1]) + front.length, keep.join(' ')).toBe(chars);
      expect(out.length, keep.join(' ')).toBeLessThanOrEqual(9_500);
    }
  });

  it('cuts the saved copy at --keep-size between two characters, and says how many bytes it holds', async () => {
    // 3-byte characters: 2 MiB (2,097,152 bytes) holds 699,050 of them and 2 bytes of the next, which are not saved.
    const ran = await guard(['--keep-size', '2MiB', ...nodeHook(`process.stdout.write('€'.repeat(1_000_000))`)], { env: { HOOKWATCH_GUARD_SPILL_BYTES: String(1024 * 1024) } });
    expect([ran.code, ran.stderr]).toEqual([0, '']);
    const match = /\n\[hookwatch guard: [\d,]+ more characters left out; the first ([\d,]+) bytes of the full output are in (\S+)\]$/.exec(ran.stdout.toString());
    expect(match?.[1]).toBe('2,097,150');
    const saved = await readFile(match?.[2] ?? '');
    expect(saved.length).toBe(2_097_150);
    expect(new TextDecoder('utf-8', { fatal: true }).decode(saved)).toBe('€'.repeat(699_050));
  });

  it('cuts the saved copy where the disk filled, between two characters, and says how many bytes it holds', async (ctx) => {
    // A 2 MiB file system for the saved outputs: the spill file's writes fail with ENOSPC part way through the
    // 4,500,000 bytes of 3-byte characters, most likely in the middle of one.
    const mount = mountTmpfs(2, 'hookwatch-guard-full-');
    if (mount === undefined) return ctx.skip('no tmpfs can be mounted here (not root)');
    try {
      const folder = join(mount, 'saved');
      const pointer = /\n\[hookwatch guard: ([\d,]+) more characters left out; the first ([\d,]+) bytes of the full output are in (\S+)\]$/;
      const count = (text: string | undefined): number => Number(text?.replace(/,/g, ''));
      // Cut as plain text whatever the exit status, as at --keep-size: a part of the output cannot pass on as written.
      for (const code of [0, 1]) {
        const ran = await guard(['--dir', folder, ...nodeHook(`process.stdout.write('€'.repeat(1_500_000)); process.exitCode = ${code}`)], { env: { HOOKWATCH_GUARD_SPILL_BYTES: String(1024 * 1024) } });
        expect([ran.code, ran.stderr], `exit ${code}`).toEqual([code, '']);
        const out = ran.stdout.toString();
        expect(out.length, `exit ${code}`).toBeLessThanOrEqual(9_500);
        const match = pointer.exec(out);
        expect(match, `exit ${code}`).not.toBeNull();
        const front = out.slice(0, out.indexOf('\n[hookwatch guard:'));
        expect(front, `exit ${code}`).toBe('€'.repeat(front.length));
        expect(count(match?.[1]), `exit ${code}`).toBe(1_500_000 - front.length);
        const path = match?.[3] ?? '';
        expect(path.startsWith(`${folder}/`), path).toBe(true);
        const saved = await readFile(path);
        // More than the spill size held in memory was saved, no more than the file system holds; the pointer line
        // says how much.
        expect(saved.length, `exit ${code}`).toBeGreaterThan(1024 * 1024);
        expect(saved.length, `exit ${code}`).toBeLessThanOrEqual(2 * 1024 * 1024);
        expect(count(match?.[2]), `exit ${code}`).toBe(saved.length);
        expect(saved.length % 3, `exit ${code}`).toBe(0);
        expect(new TextDecoder('utf-8', { fatal: true }).decode(saved), `exit ${code}`).toBe('€'.repeat(saved.length / 3));
        // Room again for the next run.
        await rm(path);
      }
    } finally {
      unmountTmpfs(mount);
    }
  });
});

describe('the saved outputs the guard keeps', () => {
  const DAY_MS = 86_400_000;
  const overBudget = ['--', `head -c 12000 /dev/zero | tr '\\0' k`];
  /** A file named as the guard names them, last modified `ageMs` ago. */
  const savedFile = async (folder: string, ageMs: number, kind = 'stdout', bytes = 10): Promise<string> => {
    const at = Date.now() - ageMs;
    const name = `${at}-${1000 + Math.floor(Math.random() * 1e6)}-${kind}.txt`;
    await writeFile(join(folder, name), 'x'.repeat(bytes));
    await utimes(join(folder, name), at / 1000, at / 1000);
    return name;
  };
  const newFolder = async (name: string): Promise<string> => {
    const folder = join(dir, name);
    await mkdir(folder, { mode: 0o700 });
    return folder;
  };
  /** The file the pointer line of a trimmed output names. */
  const pointedAt = (out: Buffer): string => /the full output is in (\S+)\]$/.exec(out.toString())?.[1] ?? '';

  it('removes saved outputs older than --keep-for (7 days by default) and leaves recent ones and anything the guard did not save', async () => {
    const folder = await newFolder('keep-age');
    const old = await savedFile(folder, 8 * DAY_MS);
    const oldField = await savedFile(folder, 8 * DAY_MS, 'hookSpecificOutput.additionalContext');
    const oldSpill = await savedFile(folder, 30 * DAY_MS, 'spill');
    const recent = await savedFile(folder, 6 * DAY_MS);
    // Not the guard's: other names, a folder, a link (to an old file outside), never followed or removed.
    const ago = (Date.now() - 30 * DAY_MS) / 1000;
    const foreign = ['notes.txt', `${Date.now() - 30 * DAY_MS}-4242-notes.txt`, '2024-01-stdout.txt'];
    for (const name of foreign) {
      await writeFile(join(folder, name), 'mine');
      await utimes(join(folder, name), ago, ago);
    }
    const outside = join(dir, 'keep-age-target.txt');
    await writeFile(outside, 'target');
    await utimes(outside, ago, ago);
    const link = `${Date.now() - 30 * DAY_MS}-99-stdout.txt`;
    await symlink(outside, join(folder, link));
    await lutimes(join(folder, link), ago, ago);
    const subfolder = `${Date.now() - 30 * DAY_MS}-98-stdout.txt`;
    await mkdir(join(folder, subfolder));
    await utimes(join(folder, subfolder), ago, ago);
    const notMine = `${Date.now() - 30 * DAY_MS}-97-stdout.txt`;
    if (process.getuid?.() === 0) {
      await writeFile(join(folder, notMine), 'someone else\'s');
      await chown(join(folder, notMine), 65534, 65534);
      await utimes(join(folder, notMine), ago, ago);
    }

    const ran = await guard(['--dir', folder, ...overBudget]);
    expect(ran.code).toBe(0);
    expect(ran.stderr).toBe('');
    const saved = pointedAt(ran.stdout);
    expect((await stat(saved)).size).toBe(12_000);
    const left = await readdir(folder);
    for (const name of [old, oldField, oldSpill]) expect(left, name).not.toContain(name);
    const expected = [recent, ...foreign, link, subfolder, basename(saved), ...(process.getuid?.() === 0 ? [notMine] : [])];
    expect(left.sort()).toEqual(expected.sort());
    expect(await readFile(outside, 'utf8')).toBe('target');

    // A shorter time, from the variable or the flag (which wins).
    const env = { HOOKWATCH_GUARD_KEEP_FOR: '5d' };
    const viaEnv = await guard(['--dir', folder, ...overBudget], { env });
    expect(viaEnv.stderr).toBe('');
    expect(await readdir(folder)).not.toContain(recent);
    const newer = await savedFile(folder, 2 * DAY_MS);
    await guard(['--dir', folder, '--keep-for', '3d', ...overBudget], { env: { HOOKWATCH_GUARD_KEEP_FOR: '1d' } });
    expect(await readdir(folder)).toContain(newer);
    await guard(['--dir', folder, '--keep-for', '36h', ...overBudget]);
    expect(await readdir(folder)).not.toContain(newer);
  });

  it('keeps the folder under --keep-size, removing the oldest first and never the output just saved', async () => {
    const folder = await newFolder('keep-size');
    const hour = 3_600_000;
    const byAge = [];
    for (const hours of [5, 4, 3, 2, 1]) byAge.push(await savedFile(folder, hours * hour, 'stdout', 100_000));
    // Saved seconds ago by a hook running beside this one: its pointer line was just delivered.
    const beside = await savedFile(folder, 5_000, 'systemMessage', 100_000);
    // 612,000 bytes with the new output's 12,000: the three oldest go, and the rest fit 350,000.
    const ran = await guard(['--dir', folder, '--keep-size', '350KB', ...overBudget]);
    expect(ran.code).toBe(0);
    expect(ran.stderr).toBe('');
    const saved = basename(pointedAt(ran.stdout));
    expect((await readdir(folder)).sort()).toEqual([byAge[3], byAge[4], beside, saved].sort());

    // A size smaller than the output just saved leaves that output alone, and those saved in the last minute (the
    // variable gives the size here): the older ones go.
    const zero = await guard(['--', `head -c 30000 /dev/zero | tr '\\0' z`], { env: { HOOKWATCH_GUARD_DIR: folder, HOOKWATCH_GUARD_KEEP_SIZE: '20000' } });
    expect(zero.stderr).toBe('');
    const last = pointedAt(zero.stdout);
    expect((await readdir(folder)).sort()).toEqual([beside, saved, basename(last)].sort());
    expect((await stat(last)).size).toBe(30_000);
  });

  it('leaves the folder alone on a run that saves nothing: an output within budget, or one of a failing hook', async () => {
    const folder = await newFolder('keep-untouched');
    const old = await savedFile(folder, 30 * DAY_MS);
    const within = await guard(['--dir', folder, '--keep-size', '0', '--', 'printf "short output"']);
    expect(within.stdout.toString()).toBe('short output');
    const failing = await guard(['--dir', folder, '--keep-size', '0', '--', `head -c 12000 /dev/zero | tr '\\0' f; exit 1`]);
    expect(failing.code).toBe(1);
    expect(failing.stdout.length).toBe(12_000);
    expect(await readdir(folder)).toEqual([old]);
  });

  it('delivers the trimmed output when old outputs cannot be removed, and says why once', async () => {
    const root = process.getuid?.() === 0;
    // A folder the guard can save in but not list: as another user when the test runs as root, who may list anything.
    const parent = await mkdtemp(join(tmpdir(), 'hookwatch-guard-keep-'));
    try {
      await chmod(parent, 0o755);
      const folder = join(parent, 'unlistable');
      await mkdir(folder, { mode: 0o700 });
      const old = await savedFile(folder, 30 * DAY_MS);
      await chmod(folder, 0o300);
      if (root) await chown(folder, 65534, 65534);
      const ran = await guard(['--dir', folder, ...overBudget], { cwd: parent, uid: root ? 65534 : undefined });
      await chmod(folder, 0o700);
      expect(ran.code).toBe(0);
      const out = ran.stdout.toString();
      expect(out.length).toBeLessThanOrEqual(9_500);
      expect(out.startsWith('k'.repeat(9_000))).toBe(true);
      expect((await stat(pointedAt(ran.stdout))).size).toBe(12_000);
      expect(ran.stderr).toMatch(new RegExp(`^hookwatch guard: cannot remove old saved outputs in ${folder} \\(EACCES[^\n]*\\); they are kept\n$`));
      expect(await readdir(folder)).toContain(old);

    } finally {
      await chmod(join(parent, 'unlistable'), 0o700).catch(() => undefined);
      await rm(parent, { recursive: true, force: true });
    }
  });
});

describe('the guard start-up', () => {
  it('loads no service code: no config schema, store, server, express, gRPC or exporter modules', async () => {
    const trace = join(dir, 'loaded.txt');
    const preload = join(dir, 'trace-loads.mjs');
    await writeFile(
      preload,
      `import { registerHooks } from 'node:module';\nimport { appendFileSync } from 'node:fs';\nregisterHooks({ resolve(specifier, context, next) { const r = next(specifier, context); appendFileSync(${JSON.stringify(trace)}, r.url + '\\n'); return r; } });\n`,
    );
    const loaded = async (entry: string[]): Promise<string[]> => {
      await writeFile(trace, '');
      await new Promise<void>((resolve, reject) => {
        const child = spawn(process.execPath, ['--import', preload, ...entry, 'guard', '--', 'true'], { stdio: ['pipe', 'ignore', 'inherit'] });
        child.on('error', reject);
        child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`exit ${code}`))));
        child.stdin.end(INPUT);
      });
      return (await readFile(trace, 'utf8')).split('\n').filter(Boolean);
    };
    for (const entry of [[BIN], [MAIN]]) {
      const urls = await loaded(entry);
      expect(urls.some((u) => u.includes('/tools/guard/index.ts'))).toBe(true);
      const heavy = urls.filter((u) => /\/(store|receiver|api|alerting|forward|config|notify)\/|service\.ts|express|grpc|opentelemetry|node_modules\/yaml\//.test(u));
      expect(heavy, entry.join(' ')).toEqual([]);
    }
  });
});

describe('StdoutCapture', () => {
  it('holds only the head in memory once past the spill size, while counting every code unit', async () => {
    const spill = join(dir, 'spill.txt');
    const passed: Buffer[] = [];
    const capture = new StdoutCapture({ spillBytes: 1024 * 1024, saveBytes: 1024 ** 3, headChars: 9_500, spillPath: () => spill, passOn: async (data) => void passed.push(data) });
    const chunk = Buffer.from('é😀abc'.repeat(10_000));
    const before = process.memoryUsage().arrayBuffers;
    for (let i = 0; i < 300; i++) expect(capture.push(chunk)).toBeUndefined();
    const grown = process.memoryUsage().arrayBuffers - before;
    const result = capture.finish();
    expect(result.kind).toBe('spilled');
    if (result.kind !== 'spilled') return;
    expect([result.cutAt, passed]).toEqual([undefined, []]);
    expect(result.chars).toBe('é😀abc'.length * 10_000 * 300);
    expect(result.head.length).toBe(9_500);
    expect((await stat(spill)).size).toBe(chunk.length * 300);
    // 300 chunks of 90 KB (27 MB) went through; what stays is bounded by the spill size.
    expect(grown).toBeLessThan(8 * 1024 * 1024);
  });

  it('cuts the spill file between two characters, even one begun in a chunk already written', async () => {
    const cases = [
      // [chunks, saveBytes, bytes kept]: '€' is e2 82 ac, '😀' f0 9f 98 80.
      [[Buffer.from('a€'), Buffer.from('€b')], 5, 4],
      [[Buffer.from('ab'), Buffer.from('😀c')], 5, 2],
      [[Buffer.from('a😀'), Buffer.from('c')], 4, 1],
      [[Buffer.from('a'), Buffer.from([0xe2]), Buffer.from([0x82]), Buffer.from([0xac, 0x62])], 3, 1],
      [[Buffer.from('ab'), Buffer.from('€€')], 5, 5],
      [[Buffer.from('aé'), Buffer.from('é')], 4, 3],
    ] as const;
    for (const [index, [chunks, saveBytes, kept]] of cases.entries()) {
      const spill = join(dir, `cut-${index}.txt`);
      const capture = new StdoutCapture({ spillBytes: 1, saveBytes, headChars: 100, spillPath: () => spill, passOn: async () => undefined });
      for (const chunk of chunks) expect(capture.push(chunk)).toBeUndefined();
      const result = capture.finish();
      const whole = Buffer.concat(chunks);
      expect(result, String(index)).toEqual({ kind: 'spilled', path: spill, head: whole.toString(), chars: whole.toString().length, cutAt: kept });
      expect(await readFile(spill), String(index)).toEqual(whole.subarray(0, kept));
    }
  });
});
