import { spawn } from 'node:child_process';
import type { ChildProcessByStdio } from 'node:child_process';
import { access, chmod, lstat, mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { captureIO } from '../../../test/support/capture-io.ts';
import { HOOKWATCH_BIN, outputOf, runHookwatch } from '../../../test/support/hookwatch-process.ts';
import { PACKAGE_ROOT, shellPath } from '../../../test/support/npm-run.ts';
import { alive, waitFor } from '../../../test/support/processes.ts';
import { runCheck } from '../check/index.ts';
import { runGuard } from './index.ts';
import type { GuardIO } from './index.ts';
import { BACKUP_SUFFIX, defaultGuardPrefix, STATE_SUFFIX, shellQuote, shellUnquote, unwrapCommand, wrapCommand } from './install.ts';
import { DEFAULT_GUARD_BUDGET } from './trim.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hookwatch-guard-install-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function guardIO(cwd: string): GuardIO & { out: () => string; err: () => string } {
  const captured = captureIO(cwd);
  return {
    stdin: process.stdin,
    stdout: (data) => {
      captured.io.stdout(data.toString());
      return Promise.resolve();
    },
    stderr: captured.io.stderr,
    env: captured.io.env,
    cwd,
    out: captured.stdout,
    err: captured.stderr,
  };
}

const SETTINGS = {
  model: 'sonnet',
  hooks: {
    SessionStart: [{ matcher: 'startup', hooks: [{ type: 'command', command: 'cat "$CLAUDE_PROJECT_DIR/notes.md" | head -c 15000', timeout: 30 }] }],
    PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: "echo 'it''s ok'" }, { type: 'prompt', prompt: 'judge' }] }],
  },
};

/**
 * Starts a settings file's command line as Claude Code does: `sh -c`, the hook input JSON on stdin, the settings'
 * `env` added to the environment. `done` gives its stdout and stderr once they close.
 */
function startHook(command: string, project: string, options: { input?: string; env?: Record<string, string> } = {}): { child: ChildProcessByStdio<Writable, Readable, Readable>; done: Promise<{ stdout: string; stderr: string }> } {
  const env = { ...process.env, CLAUDE_PROJECT_DIR: project, HOOKWATCH_GUARD_DIR: join(project, 'full-outputs'), ...options.env };
  const child = spawn('/bin/sh', ['-c', command], { cwd: project, env });
  const done = new Promise<{ stdout: string; stderr: string }>((resolve) => {
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', () => resolve({ stdout, stderr }));
  });
  // A command that never reads its input closes the pipe when it exits first (EPIPE), as with a real hook.
  child.stdin.on('error', () => undefined);
  child.stdin.end(options.input ?? '{}');
  return { child, done };
}

/** Runs a settings file's command line as Claude Code does (startHook); its stdout and stderr. */
const runHook = (command: string, project: string, options: { input?: string; env?: Record<string, string> } = {}): Promise<{ stdout: string; stderr: string }> =>
  startHook(command, project, options).done;

/** The command strings of a settings file, in order. */
const commands = async (path: string): Promise<string[]> => {
  const settings = JSON.parse((await readFile(path, 'utf8')).replace(/^\uFEFF/, '')) as { hooks: Record<string, { hooks: { command: string }[] }[]> };
  return Object.values(settings.hooks).flatMap((groups) => groups.flatMap((g) => g.hooks.map((h) => h.command)));
};

describe('hookwatch guard --install', () => {
  it('shell-quotes so that unquoting gives the original back', () => {
    for (const s of ['plain', `it's "quoted" $HOME | x`, "''", 'a\nb']) expect(shellUnquote(shellQuote(s))).toBe(s);
    expect(unwrapCommand(wrapCommand('echo hi', 'hookwatch guard', 9000), ['hookwatch guard'])).toBe('echo hi');
    const reporting = wrapCommand('echo "$X"', 'hookwatch guard', 9000, 'http://hookwatch:4318');
    expect(reporting).toBe(`exec hookwatch guard --budget 9000 --report http://hookwatch:4318 -- 'echo "$X"'`);
    expect(unwrapCommand(reporting, ['hookwatch guard'])).toBe('echo "$X"');
    expect(unwrapCommand('echo guard', ['hookwatch guard'])).toBeUndefined();
    // Wrapped by an earlier release, without exec: recognised, and given exec unless its guard call is a shell line.
    expect(unwrapCommand(`hookwatch guard --budget 9000 -- 'echo hi'`, ['hookwatch guard'])).toBe('echo hi');
    expect(wrapCommand(`hookwatch guard --budget 9000 -- 'echo hi'`, 'hookwatch guard', undefined)).toBe(`exec hookwatch guard --budget 9000 -- 'echo hi'`);
    expect(wrapCommand(`cd /x && hookwatch guard -- 'echo hi'`, 'cd /x && hookwatch guard', undefined)).toBe(`cd /x && hookwatch guard -- 'echo hi'`);
  });

  it('wraps every command hook, keeps a backup, is idempotent, and --uninstall restores the commands', async () => {
    const project = join(dir, 'project');
    await mkdir(join(project, '.claude'), { recursive: true });
    const path = join(project, '.claude', 'settings.json');
    const original = `${JSON.stringify(SETTINGS, null, 2)}\n`;
    await writeFile(path, original);

    const io = guardIO(project);
    expect(await runGuard(['--install', '--command', 'hookwatch guard'], io)).toEqual({ code: 0 });
    expect(io.out()).toContain('wrapped 2 of 2 command hook(s)');
    const wrapped = JSON.parse(await readFile(path, 'utf8')) as typeof SETTINGS;
    expect(wrapped.hooks.SessionStart[0]?.hooks[0]?.command).toBe(`exec hookwatch guard -- 'cat "$CLAUDE_PROJECT_DIR/notes.md" | head -c 15000'`);
    expect(wrapped.hooks.SessionStart[0]?.hooks[0]?.timeout).toBe(30);
    expect(wrapped.hooks.PreToolUse[0]?.hooks[1]).toEqual({ type: 'prompt', prompt: 'judge' });
    expect(wrapped.model).toBe('sonnet');
    expect(await readFile(`${path}${BACKUP_SUFFIX}`, 'utf8')).toBe(original);

    const again = guardIO(project);
    await runGuard(['--install', '--command', 'hookwatch guard'], again);
    expect(again.out()).toContain('nothing to change');
    expect(JSON.parse(await readFile(path, 'utf8'))).toEqual(wrapped);

    const undo = guardIO(project);
    await runGuard(['--uninstall', '.claude/settings.json'], undo);
    expect(undo.out()).toContain('unwrapped 2 of 2');
    expect(JSON.parse(await readFile(path, 'utf8'))).toEqual(SETTINGS);
  });

  it('keeps the settings file\'s permissions, and changes a linked file where it lives', async () => {
    const project = join(dir, 'private');
    await mkdir(join(project, 'dotfiles'), { recursive: true });
    const target = join(project, 'dotfiles', 'settings.json');
    const original = `${JSON.stringify(SETTINGS, null, 2)}\n`;
    await writeFile(target, original);
    await chmod(target, 0o600);
    const link = join(project, 'settings.json');
    await symlink(target, link);
    const mode = async (p: string): Promise<number> => (await stat(p)).mode & 0o777;

    expect(await runGuard(['--install', 'settings.json', '--command', 'hookwatch guard'], guardIO(project))).toEqual({ code: 0 });
    expect((await lstat(link)).isSymbolicLink()).toBe(true);
    expect(await readFile(target, 'utf8')).toContain('hookwatch guard --');
    expect(await mode(target)).toBe(0o600);
    expect(await mode(`${target}${BACKUP_SUFFIX}`)).toBe(0o600);

    expect(await runGuard(['--uninstall', 'settings.json'], guardIO(project))).toEqual({ code: 0 });
    expect((await lstat(link)).isSymbolicLink()).toBe(true);
    expect(await readFile(target, 'utf8')).toBe(original);
    expect(await mode(target)).toBe(0o600);
  });

  it('a wrapped hook runs through the shell exactly like the original did', async () => {
    const project = join(dir, 'shell');
    await mkdir(join(project, '.claude'), { recursive: true });
    const path = join(project, '.claude', 'settings.json');
    const command = `printf '%s|%s' "it's" "$CLAUDE_PROJECT_DIR"`;
    await writeFile(path, JSON.stringify({ hooks: { Stop: [{ hooks: [{ type: 'command', command }] }] } }));
    await runGuard(['--install', path], guardIO(project));
    const installed = (JSON.parse(await readFile(path, 'utf8')) as { hooks: { Stop: { hooks: { command: string }[] }[] } }).hooks.Stop[0]?.hooks[0]?.command ?? '';
    expect(installed).toContain(' guard -- ');
    expect((await runHook(installed, project)).stdout).toBe((await runHook(command, project)).stdout);
  });

  it('a wrapped hook gets Claude Code\'s timeout signal, sent to the shell alone, through the guard, which then kills what is left of it', async () => {
    // The hook notes the stop signal and runs on, with a child; once started, it writes "<its parent> <itself> <its child>".
    const line = `trap 'echo TERM >> stopped' TERM; sleep 60 & echo $PPID $$ $! > started; while :; do wait; done`;
    // The hook as a command line the guard's shell runs, and as a hook file, which the guard's shell (dash on
    // Debian and Ubuntu) runs as its child and leaves running when it ends on the signal.
    for (const form of ['line', 'file'] as const) {
      const project = join(dir, `stopped-${form}`);
      await mkdir(project, { recursive: true });
      await writeFile(join(project, 'hook.sh'), `#!/bin/sh\n${line}\n`, { mode: 0o755 });
      const path = join(project, 's.json');
      const command = form === 'line' ? line : '"$CLAUDE_PROJECT_DIR"/hook.sh';
      await writeFile(path, JSON.stringify({ hooks: { Stop: [{ hooks: [{ type: 'command', command }] }] } }));
      await runGuard(['--install', path], guardIO(project));
      const [installed = ''] = await commands(path);
      // Claude Code runs the line with /bin/sh -c (dash on Debian and Ubuntu, which runs a lone command as its
      // child) and, on its timeout, signals that shell only.
      const hook = startHook(installed, project, { input: JSON.stringify({ hook_event_name: 'Stop' }) });
      const ended = new Promise<NodeJS.Signals | null>((resolve) => hook.child.on('exit', (_code, signal) => resolve(signal)));
      const started = join(project, 'started');
      await waitFor(async () => ((await readFile(started, 'utf8').catch(() => '')).match(/\d+/g) ?? []).length === 3);
      const pids = (await readFile(started, 'utf8')).trim().split(' ').map(Number);
      try {
        // The shell Claude Code started is the guard itself: the parent of a hook line, of a hook file its shell.
        expect([form, pids[0] === hook.child.pid]).toEqual([form, form === 'line']);
        hook.child.kill('SIGTERM');
        // The guard passes the signal on, then kills the hook, which ignores it, and its child after the kill grace.
        expect(await ended).toBe('SIGTERM');
        await waitFor(async () => !pids.some(alive)).catch(() => undefined);
        expect([form, ...pids.map(alive)]).toEqual([form, false, false, false]);
        expect([form, await readFile(join(project, 'stopped'), 'utf8').catch(() => '')]).toEqual([form, 'TERM\n']);
      } finally {
        for (const pid of pids.filter(alive)) process.kill(pid, 'SIGKILL');
      }
    }
  });

  it('a wrapped memory hook of long markdown paragraphs still delivers about the budget, cut at a word', async () => {
    const project = join(dir, 'paragraphs');
    await mkdir(join(project, '.claude', 'hooks'), { recursive: true });
    // Headings and paragraphs of about 1,900 characters, each on one line, as markdown memory files are often written.
    const paragraph = Array.from({ length: 260 }, (_, i) => `word${i}`).join(' ');
    const memory = Array.from({ length: 8 }, (_, i) => `## Note ${i}\n\n${paragraph}\n\n`).join('');
    await writeFile(join(project, 'memory.md'), memory);
    const path = join(project, '.claude', 'settings.json');
    await writeFile(path, JSON.stringify({ hooks: { SessionStart: [{ matcher: 'startup', hooks: [{ type: 'command', command: 'cat "$CLAUDE_PROJECT_DIR/memory.md"' }] }] } }));
    await runGuard(['--install', path], guardIO(project));
    const [installed = ''] = await commands(path);
    const delivered = (await runHook(installed, project, { input: JSON.stringify({ hook_event_name: 'SessionStart', source: 'startup', session_id: 's' }) })).stdout;
    const pointer = /\n\[hookwatch guard: [\d,]+ more characters left out; the full output is in (\S+)\]$/.exec(delivered);
    expect(pointer).not.toBeNull();
    expect(await readFile(pointer?.[1] ?? '', 'utf8')).toBe(memory);
    const front = delivered.slice(0, pointer?.index);
    expect(memory.startsWith(front)).toBe(true);
    expect(front).toMatch(/ $|\n$/);
    expect(delivered.length).toBeLessThanOrEqual(DEFAULT_GUARD_BUDGET);
    expect(delivered.length).toBeGreaterThan(9_000);
  });

  it('never shows the password or token of a mistyped report URL, at install or on every hook run', async () => {
    const project = join(dir, 'report-secret');
    await mkdir(join(project, '.claude'), { recursive: true });
    const path = join(project, '.claude', 'settings.json');
    const original = JSON.stringify({ hooks: { Stop: [{ hooks: [{ type: 'command', command: 'echo done' }] }] } });
    await writeFile(path, original);
    const secrets = ['Hunter2Secret', 'T0kenValue'];
    const typos = ['ftps://ops:Hunter2Secret@hookwatch:4318', 'hookwatch:4318/?token=T0kenValue', 'http://ops:Hunter2Secret@hook watch:4318/?token=T0kenValue'];
    for (const typo of typos) {
      const install = guardIO(project);
      expect(await runGuard(['--install', path, '--report', typo], install)).toEqual({ code: 2 });
      expect(install.err()).toContain('--report: ');
      for (const secret of secrets) expect(install.err(), typo).not.toContain(secret);
    }
    expect(await readFile(path, 'utf8')).toBe(original);
    await runGuard(['--install', path], guardIO(project));
    const [installed = ''] = await commands(path);
    for (const typo of typos) {
      // Set in the settings' env for every hook, as the README suggests: each run names the mistake on stderr.
      const run = await runHook(installed, project, { input: JSON.stringify({ hook_event_name: 'Stop' }), env: { HOOKWATCH_GUARD_REPORT: typo } });
      expect(run.stdout).toBe('done\n');
      expect(run.stderr).toContain('HOOKWATCH_GUARD_REPORT: ');
      for (const secret of secrets) expect(run.stderr, typo).not.toContain(secret);
    }
  });

  it('wraps a settings file saved with a byte order mark, as Windows editors save it, and gives its bytes back', async () => {
    const project = join(dir, 'bom');
    await mkdir(join(project, '.claude'), { recursive: true });
    const path = join(project, '.claude', 'settings.json');
    // Claude Code reads such a file and runs its hooks; a mark and CRLF line ends are what PowerShell and Notepad write.
    const original = '\uFEFF{\r\n  "hooks": {\r\n    "Stop": [ { "hooks": [ { "type": "command", "command": "echo \\"it works\\"" } ] } ]\r\n  }\r\n}\r\n';
    await writeFile(path, original);
    const install = guardIO(project);
    expect(await runGuard(['--install', path], install)).toEqual({ code: 0 });
    expect(install.out()).toContain('wrapped 1 of 1 command hook(s)');
    const wrapped = await readFile(path, 'utf8');
    expect(wrapped.startsWith('\uFEFF{\r\n')).toBe(true);
    const [installed = ''] = await commands(path);
    expect(installed).toContain(' guard -- ');
    expect((await runHook(installed, project, { input: JSON.stringify({ hook_event_name: 'Stop' }) })).stdout).toBe('it works\n');
    const check = captureIO(project);
    expect(await runCheck(['--settings', path], check.io)).toBe(0);
    expect(check.stdout()).toContain('OK: 1 hook checked');
    expect(await runGuard(['--uninstall', path], guardIO(project))).toEqual({ code: 0 });
    expect(await readFile(path, 'utf8')).toBe(original);
    await expect(access(`${path}${BACKUP_SUFFIX}`)).rejects.toThrow();
  });

  /** A settings file as a user writes it (one line, not how --install formats it), in a folder of its own. */
  async function userSettings(name: string): Promise<{ project: string; path: string; original: string }> {
    const project = join(dir, name);
    await mkdir(project, { recursive: true });
    const path = join(project, 's.json');
    const original = `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"echo hello"}]}],"Stop":[{"hooks":[{"type":"command","command":"printf '%s' \\"it's\\" | tr a-z A-Z # -- 'x'"}]}]}}`;
    await writeFile(path, original);
    return { project, path, original };
  }

  it('--install with a custom --command, then --uninstall without it, gives the original file back byte for byte', async () => {
    const { project, path, original } = await userSettings('custom-prefix');
    const install = guardIO(project);
    expect(await runGuard(['--install', '--command', '/usr/bin/hookwatch-guard', 's.json'], install)).toEqual({ code: 0 });
    expect(install.out()).toContain('wrapped 2 of 2');
    expect((await commands(path))[0]).toBe(`exec /usr/bin/hookwatch-guard -- 'echo hello'`);

    const undo = guardIO(project);
    expect(await runGuard(['--uninstall', 's.json'], undo)).toEqual({ code: 0 });
    expect(undo.out()).toContain('unwrapped 2 of 2');
    expect(await readFile(path, 'utf8')).toBe(original);
    // The backup's work is done once the file is it again: the next --install backs up the file as it is then.
    expect(undo.out()).toContain(`${path}${BACKUP_SUFFIX} was removed`);
    await expect(access(`${path}${BACKUP_SUFFIX}`)).rejects.toThrow();
    const edited = original.replace('echo hello', 'echo edited');
    await writeFile(path, edited);
    await runGuard(['--install', '--command', '/usr/bin/hookwatch-guard', 's.json'], guardIO(project));
    expect(await readFile(`${path}${BACKUP_SUFFIX}`, 'utf8')).toBe(edited);
    await runGuard(['--uninstall', 's.json'], guardIO(project));
    expect(await readFile(path, 'utf8')).toBe(edited);
    await writeFile(path, original);

    // Given --command, uninstall recognises its prefix even with no record of the install beside the file.
    await runGuard(['--install', '--command', '/opt/hw/run guard-it', 's.json'], guardIO(project));
    await rm(`${path}${STATE_SUFFIX}`);
    const unknown = guardIO(project);
    await runGuard(['--uninstall', 's.json'], unknown);
    expect(unknown.out()).toContain('nothing to change (2 command hook(s), none left to be unwrapped); 2 look wrapped by another prefix: give it as --command <prefix>');
    const told = guardIO(project);
    await runGuard(['--uninstall', '--command', '/opt/hw/run guard-it', 's.json'], told);
    expect(told.out()).toContain('unwrapped 2 of 2');
    expect(await readFile(path, 'utf8')).toBe(original);
  });

  it('a second --install, with the same --command or another, changes nothing: it never wraps twice', async () => {
    const { project, path } = await userSettings('twice');
    await runGuard(['--install', '--command', '/usr/bin/hookwatch-guard', 's.json'], guardIO(project));
    const once = await readFile(path, 'utf8');
    expect(await commands(path)).toEqual([`exec /usr/bin/hookwatch-guard -- 'echo hello'`, `exec /usr/bin/hookwatch-guard -- ${shellQuote(`printf '%s' "it's" | tr a-z A-Z # -- 'x'`)}`]);
    for (const args of [['--command', '/usr/bin/hookwatch-guard'], ['--command', '/usr/bin/hookwatch-guard', '--budget', '9000'], ['--command', 'hookwatch guard'], []]) {
      const again = guardIO(project);
      await runGuard(['--install', ...args, 's.json'], again);
      expect(again.out(), args.join(' ')).toContain('nothing to change (2 command hook(s), none left to be wrapped)');
      expect(again.out().includes('2 wrapped with another --budget or --report keep it: run --uninstall, then --install with the new ones'), args.join(' ')).toBe(args.includes('--budget'));
      expect(await readFile(path, 'utf8')).toBe(once);
    }
  });

  it('a command an earlier release wrapped without exec: --uninstall unwraps it, --install gives it exec and keeps its options', async () => {
    const { project, path, original } = await userSettings('without-exec');
    /** The file as an earlier release left it: wrapped, with its backup and record, but no exec. */
    const earlier = async (args: string[]): Promise<string[]> => {
      await writeFile(path, original);
      await runGuard(['--install', '--command', '/usr/bin/hookwatch-guard', ...args, 's.json'], guardIO(project));
      await writeFile(path, (await readFile(path, 'utf8')).replaceAll('"exec /usr/bin/hookwatch-guard', '"/usr/bin/hookwatch-guard'));
      return commands(path);
    };
    expect((await earlier([]))[0]).toBe(`/usr/bin/hookwatch-guard -- 'echo hello'`);
    const undo = guardIO(project);
    await runGuard(['--uninstall', 's.json'], undo);
    expect(undo.out()).toContain('unwrapped 2 of 2');
    expect(await readFile(path, 'utf8')).toBe(original);

    const old = await earlier(['--budget', '9000']);
    expect(old[0]).toBe(`/usr/bin/hookwatch-guard --budget 9000 -- 'echo hello'`);
    const upgrade = guardIO(project);
    await runGuard(['--install', 's.json'], upgrade);
    expect(upgrade.out()).toContain('wrapped 0 of 2 command hook(s); 2 wrapped without exec by an earlier hookwatch now start the guard with exec');
    expect(await commands(path)).toEqual(old.map((c) => `exec ${c}`));
    const again = guardIO(project);
    await runGuard(['--install', '--command', 'exec /usr/bin/hookwatch-guard', 's.json'], again);
    expect(again.out()).toContain('nothing to change');
    await runGuard(['--uninstall', 's.json'], guardIO(project));
    expect(await readFile(path, 'utf8')).toBe(original);

    // A --command that starts with exec itself is not given a second one.
    await runGuard(['--install', '--command', 'exec /usr/bin/hookwatch-guard', 's.json'], guardIO(project));
    expect((await commands(path))[0]).toBe(`exec /usr/bin/hookwatch-guard -- 'echo hello'`);
  });

  it('a second --install with the options the commands were wrapped with says nothing about changing them', async () => {
    const { project } = await userSettings('same-options');
    const options = ['--command', '/usr/bin/hookwatch-guard', '--budget', '9000', '--report', 'http://hookwatch:4318'];
    await runGuard(['--install', ...options, 's.json'], guardIO(project));
    const same = guardIO(project);
    await runGuard(['--install', ...options, 's.json'], same);
    expect(same.out()).toContain('nothing to change');
    expect(same.out()).not.toContain('--uninstall');
    const budgetOnly = guardIO(project);
    await runGuard(['--install', '--budget', '9000', 's.json'], budgetOnly);
    expect(budgetOnly.out()).not.toContain('--uninstall');
    const otherReport = guardIO(project);
    await runGuard(['--install', '--budget', '9000', '--report', 'http://other:4318', 's.json'], otherReport);
    expect(otherReport.out()).toContain('2 wrapped with another --budget or --report keep it: run --uninstall, then --install with the new ones');
  });

  it('never wraps a guard call written by hand, and --uninstall unwraps only what --install wrote', async () => {
    const project = join(dir, 'by-hand');
    await mkdir(project, { recursive: true });
    const path = join(project, 's.json');
    const byHand = [
      `/usr/bin/node /opt/hookwatch/collector/bin/hookwatch.mjs guard --report http://x:4318 -- "$CLAUDE_PROJECT_DIR"/.claude/hooks/brief.sh`,
      `hookwatch guard --timeout 10 -- './x.sh'`,
      'hookwatch guard -- ./mine.sh',
    ];
    const hooks = [...byHand, 'echo plain'].map((command) => ({ type: 'command', command }));
    await writeFile(path, JSON.stringify({ hooks: { Stop: [{ hooks }] } }));
    const install = guardIO(project);
    await runGuard(['--install', 's.json'], install);
    expect(install.out()).toContain('wrapped 1 of 4 command hook(s)');
    const wrapped = await commands(path);
    expect(wrapped.slice(0, 3)).toEqual(byHand);
    expect(wrapped[3]).toMatch(/ guard -- 'echo plain'$/);

    const undo = guardIO(project);
    await runGuard(['--uninstall', 's.json'], undo);
    expect(undo.out()).toContain('unwrapped 1 of 4 command hook(s)');
    expect(await commands(path)).toEqual([...byHand, 'echo plain']);
    for (const i of [0, 1, 2]) expect(undo.err()).toContain(`hookwatch guard: hooks.Stop[0].hooks[${i}] (Stop) calls the guard in a form --install did not write: left as it is\n`);
  });

  it('--uninstall says nothing of hooks that only pass arguments after --, calling no guard', async () => {
    const project = join(dir, 'double-dash');
    await mkdir(project, { recursive: true });
    const path = join(project, 's.json');
    const hooks = ['npm run lint -- --fix', 'rg -n TODO -- src'].map((command) => ({ type: 'command', command }));
    await writeFile(path, JSON.stringify({ hooks: { PostToolUse: [{ matcher: 'Edit', hooks }] } }));
    const undo = guardIO(project);
    expect(await runGuard(['--uninstall', 's.json'], undo)).toEqual({ code: 0 });
    expect(undo.out()).toContain('nothing to change (2 command hook(s), none left to be unwrapped)\n');
    expect(undo.err()).toBe('');
  });

  it('keeps the backup of the original file through later installs, and says so rather than overwrite it', async () => {
    const { project, path, original } = await userSettings('backup');
    const backup = `${path}${BACKUP_SUFFIX}`;
    await runGuard(['--install', '--command', '/usr/bin/hookwatch-guard', 's.json'], guardIO(project));
    expect(await readFile(backup, 'utf8')).toBe(original);
    await runGuard(['--install', '--command', '/usr/bin/hookwatch-guard', 's.json'], guardIO(project));
    expect(await readFile(backup, 'utf8')).toBe(original);

    // The user adds a hook; installing again wraps only that one and leaves the backup alone.
    const settings = JSON.parse(await readFile(path, 'utf8')) as { hooks: Record<string, unknown> };
    settings.hooks.Stop = [{ hooks: [{ type: 'command', command: 'echo added' }] }];
    await writeFile(path, JSON.stringify(settings));
    const later = guardIO(project);
    await runGuard(['--install', '--command', '/usr/bin/hookwatch-guard', 's.json'], later);
    expect(later.out()).toContain('wrapped 1 of 2');
    expect(later.out()).toContain(`${backup} already holds the file from before hookwatch first changed it; kept as it is`);
    expect(await readFile(backup, 'utf8')).toBe(original);
    expect(await commands(path)).toEqual([`exec /usr/bin/hookwatch-guard -- 'echo hello'`, `exec /usr/bin/hookwatch-guard -- 'echo added'`]);
  });

  it('names events, matchers, fields and files with line breaks or bidi controls as text that cannot forge a line', async () => {
    const project = join(dir, 'hostile names');
    await mkdir(project, { recursive: true });
    const file = 'settings\u202Enosj.json';
    const forged = '\nhookwatch guard: s.json: wrapped 2 of 2 command hook(s)\n';
    await writeFile(join(project, file), JSON.stringify({ hooks: { [`Stop\u2066${forged}`]: [{ matcher: 'm\u202E', hooks: [{ type: 'command', command: 'echo done', [`x\u202E${forged}`]: 1 }] }] } }));
    const run = await runHookwatch(['guard', '--install', '--command', 'hookwatch guard', file], { cwd: project });
    const event = 'Stop\\u2066\\nhookwatch guard: s.json: wrapped 2 of 2 command hook(s)\\n';
    expect(run.stderr).toBe(
      `hookwatch guard: hooks.${event}[0].hooks[0] (${event}, matcher "m\\u202e") has fields the guard does not know ` +
        '("x\\u202e\\nhookwatch guard: s.json: wrapped 2 of 2 command hook(s)\\n"): left as it is, not wrapped\n',
    );
    expect(run.stdout).toBe(`hookwatch guard: ${join(project, 'settings\\u202enosj.json')}: nothing to change (0 command hook(s), none left to be wrapped)\n`);
    expect(run.code).toBe(0);

    // A command the guard cannot start, named as it runs a hook.
    const missing = await runHookwatch(['guard', '--', `./no-such-hook\u202E${forged}`, 'arg'], { cwd: project });
    expect(missing.stderr).toMatch(/^hookwatch guard: cannot run \.\/no-such-hook\\u202e\\nhookwatch guard: s\.json: wrapped 2 of 2 command hook\(s\)\\n: [^\n]*\n$/);
    expect(missing.code).toBe(127);
  });

  it('leaves a command hook with fields it does not know as it is, and names it', async () => {
    const project = join(dir, 'unknown-fields');
    await mkdir(project, { recursive: true });
    const path = join(project, 's.json');
    const withArgs = { type: 'command', command: './lint.sh', args: ['--fix', 'a b'] };
    await writeFile(path, JSON.stringify({ hooks: { PreToolUse: [{ matcher: 'Bash', hooks: [withArgs] }], Stop: [{ hooks: [{ type: 'command', command: 'echo done' }] }] } }));
    const io = guardIO(project);
    expect(await runGuard(['--install', '--command', 'hookwatch guard', 's.json'], io)).toEqual({ code: 0 });
    expect(io.err()).toBe('hookwatch guard: hooks.PreToolUse[0].hooks[0] (PreToolUse, matcher "Bash") has fields the guard does not know ("args"): left as it is, not wrapped\n');
    expect(io.out()).toContain('wrapped 1 of 1 command hook(s)');
    const settings = JSON.parse(await readFile(path, 'utf8')) as { hooks: { PreToolUse: { hooks: unknown[] }[] } };
    expect(settings.hooks.PreToolUse[0]?.hooks[0]).toEqual(withArgs);
    expect(await commands(path)).toEqual(['./lint.sh', `exec hookwatch guard -- 'echo done'`]);
  });

  it('changes only the command strings: the rest of the file keeps its bytes', async () => {
    const project = join(dir, 'layout');
    await mkdir(project, { recursive: true });
    const path = join(project, 's.json');
    const layout = (command: string, allow = '"Read"'): string =>
      `{\n\t"model": "sonnet", "ratio": 1.0, "id": 12345678901234567890,\n\t"permissions": {"allow": ["Bash(ls)", ${allow}]},\n` +
      `\t"hooks": {\n\t\t"Stop": [ { "hooks": [ { "type": "command", "command": ${JSON.stringify(command)}, "timeout": 30 } ] } ]\n\t}\n}\n`;
    await writeFile(path, layout('echo done'));
    await runGuard(['--install', '--command', 'hookwatch guard', 's.json'], guardIO(project));
    expect(await readFile(path, 'utf8')).toBe(layout(`exec hookwatch guard -- 'echo done'`));
    // Edited since the install, the file is not the backup again: --uninstall too changes the command alone.
    await writeFile(path, layout(`exec hookwatch guard -- 'echo done'`, '"Read", "Edit"'));
    await runGuard(['--uninstall', 's.json'], guardIO(project));
    expect(await readFile(path, 'utf8')).toBe(layout('echo done', '"Read", "Edit"'));
    await expect(access(`${path}${BACKUP_SUFFIX}`)).resolves.toBeUndefined();

    // A key given twice leaves it unclear which command is meant: nothing is written.
    const twice = `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo a"}]}]}, "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo b"}]}]}}`;
    await writeFile(path, twice);
    const io = guardIO(project);
    expect(await runGuard(['--install', 's.json'], io)).toEqual({ code: 2 });
    expect(io.err()).toContain('cannot change the commands in place (is a key given twice?); nothing written');
    expect(await readFile(path, 'utf8')).toBe(twice);
  });

  it('refuses options it would not write into the commands, and changes nothing', async () => {
    const project = join(dir, 'run-options');
    await mkdir(project, { recursive: true });
    const path = join(project, 's.json');
    const original = `${JSON.stringify(SETTINGS, null, 2)}\n`;
    await writeFile(path, original);
    for (const args of [['--dir', join(project, 'full')], ['--timeout', '5'], ['--shell', '/bin/bash'], ['--keep-for', '3d'], ['--keep-size', '2GiB'], ['--kill-grace', '5s'], ['--budget', '9000', '--timeout', '5']]) {
      const io = guardIO(project);
      expect(await runGuard(['--install', ...args, 's.json'], io), args.join(' ')).toEqual({ code: 2 });
      expect(io.err()).toContain(`--install writes --budget and --report into the wrapped commands, not ${args.includes('--budget') ? '--timeout' : args[0]}`);
      expect(await readFile(path, 'utf8')).toBe(original);
      await expect(access(`${path}${BACKUP_SUFFIX}`)).rejects.toThrow();
    }
    // The wrapped commands start with exec, which runs one command: a shell line, or an assignment, would not run.
    for (const prefix of ['HOOKWATCH_GUARD_DIR=/x hookwatch guard', 'cd /x && hookwatch guard']) {
      const io = guardIO(project);
      expect(await runGuard(['--install', '--command', prefix, 's.json'], io), prefix).toEqual({ code: 2 });
      expect(io.err()).toContain('--command follows exec in the wrapped commands: give one command and its arguments, not a shell line (env NAME=value hookwatch guard sets a variable)');
      expect(await readFile(path, 'utf8')).toBe(original);
    }
    // Quoted, such characters are one word's: a Node under "Program Files (x86)" runs with exec as any other.
    const quoted = '"/opt/Program Files (x86)/nodejs/node" /opt/hookwatch/collector/bin/hookwatch.mjs guard';
    expect(await runGuard(['--install', '--command', quoted, 's.json'], guardIO(project))).toEqual({ code: 0 });
    const installed = JSON.parse(await readFile(path, 'utf8')) as typeof SETTINGS;
    expect(installed.hooks.SessionStart[0]?.hooks[0]?.command).toBe(wrapCommand(SETTINGS.hooks.SessionStart[0]?.hooks[0]?.command ?? '', quoted, undefined));
    expect(installed.hooks.SessionStart[0]?.hooks[0]?.command).toMatch(/^exec "\/opt\/Program Files \(x86\)\/nodejs\/node" /);
    expect(await runGuard(['--uninstall', 's.json'], guardIO(project))).toEqual({ code: 0 });
    expect(await readFile(path, 'utf8')).toBe(original);
    // In the guard call of --command they are written, and --uninstall recognises that call.
    expect(await runGuard(['--install', '--command', `hookwatch guard --dir ${join(project, 'full')}`, 's.json'], guardIO(project))).toEqual({ code: 0 });
    expect(await readFile(path, 'utf8')).toContain(`hookwatch guard --dir ${join(project, 'full')} -- `);
    const undo = guardIO(project);
    expect(await runGuard(['--uninstall', '--report', 'http://hookwatch:4318', 's.json'], undo)).toEqual({ code: 2 });
    expect(undo.err()).toContain('--uninstall takes a settings file and --command only, not --report');
    expect(await runGuard(['--uninstall', 's.json'], guardIO(project))).toEqual({ code: 0 });
    expect(await readFile(path, 'utf8')).toBe(original);
  });

  it('names the problem in a settings file it cannot use', async () => {
    const path = join(dir, 'bad.json');
    await writeFile(path, '{"hooks": {"Stop": {}}}');
    const io = guardIO(dir);
    expect(await runGuard(['--install', path], io)).toEqual({ code: 2 });
    expect(io.err()).toContain('hooks.Stop: expected an array of matcher groups');
  });
});

describe('hookwatch guard --install as the README shows it', () => {
  it('wraps the hooks of the project it is run in', async () => {
    const readme = await readFile(join(PACKAGE_ROOT, 'README.md'), 'utf8');
    const line = /^npm .* guard --install .*$/m.exec(readme)?.[0];
    expect(line).toBeDefined();
    // Without its optional flags, and with this package where the README says /path/to/hookwatch.
    const command = (line ?? '').replace(/ \[[^\]]*\]/g, '').replace('/path/to/hookwatch', PACKAGE_ROOT);
    const project = await mkdtemp(join(dir, 'readme-install-'));
    const path = join(project, '.claude', 'settings.json');
    await mkdir(join(project, '.claude'));
    await writeFile(path, JSON.stringify(SETTINGS));
    // Run in the project, by a shell of the user's: npm and the system Node on PATH, not the package's Node.
    const ran = await outputOf(spawn('/bin/sh', ['-c', command], { cwd: project, env: { PATH: shellPath(), HOME: project }, stdio: ['ignore', 'pipe', 'pipe'] }));
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toContain(`${path}: wrapped 2 of 2 command hook(s)`);
    const wrapped = JSON.parse(await readFile(path, 'utf8')) as typeof SETTINGS;
    expect(wrapped.hooks.SessionStart[0]?.hooks[0]?.command).toBe(wrapCommand(SETTINGS.hooks.SessionStart[0]?.hooks[0]?.command ?? '', defaultGuardPrefix(), undefined));
  });
});

describe('hookwatch check recommends the guard', () => {
  it('with the command line that wraps the hook, which works where hookwatch is not on PATH', async () => {
    const project = join(dir, 'check advice');
    await mkdir(join(project, '.claude', 'hooks'), { recursive: true });
    await writeFile(join(project, '.claude', 'hooks', 'memory.sh'), `#!/bin/sh\nhead -c 12000 /dev/zero | tr '\\0' x\n`);
    await chmod(join(project, '.claude', 'hooks', 'memory.sh'), 0o755);
    const hook = '"$CLAUDE_PROJECT_DIR"/.claude/hooks/memory.sh';
    const checked = await runHookwatch(['check', '--', hook], { cwd: project });
    expect(checked.code).toBe(1);
    expect(checked.stdout).toContain('Until the hook is fixed:');
    // Printed as settings.json holds it, so it can be pasted in as it is.
    const printed = /^ {2}"command": (".*")$/m.exec(checked.stdout)?.[1];
    expect(printed).toBeDefined();
    const command = JSON.parse(printed ?? '""') as string;
    expect(command).toBe(wrapCommand(hook, defaultGuardPrefix(), undefined));
    // Claude Code's PATH need not hold hookwatch: the line names the Node and hookwatch to run.
    const ran = await runHook(command, project, { env: { PATH: '/usr/bin:/bin' } });
    expect(ran.stderr).toBe('');
    expect(ran.stdout.length).toBeLessThanOrEqual(DEFAULT_GUARD_BUDGET);
    expect(ran.stdout.startsWith('x'.repeat(9000))).toBe(true);
    expect(ran.stdout.slice(9000)).toMatch(/^x*\n\[hookwatch guard: [\d,]+ more characters left out; the full output is in .+\]$/);
    const fine = captureIO(dir);
    await runCheck(['--', 'echo fine'], fine.io);
    expect(fine.stdout()).not.toContain('hookwatch guard');
  });

  it('for a settings file, with the --install line for that file, after which every output is within the cap', async () => {
    const project = join(dir, 'check settings advice');
    await mkdir(join(project, '.claude', 'hooks'), { recursive: true });
    await writeFile(join(project, '.claude', 'hooks', 'dump.sh'), `#!/bin/sh\nhead -c 300000 /dev/zero | tr '\\0' y\n`);
    await chmod(join(project, '.claude', 'hooks', 'dump.sh'), 0o755);
    const path = join(project, '.claude', 'settings.json');
    await writeFile(path, JSON.stringify({ hooks: { SessionStart: [{ hooks: [{ type: 'command', command: '"$CLAUDE_PROJECT_DIR"/.claude/hooks/dump.sh' }] }] } }));
    // Run from another folder, the settings file given relative to it: the line names the file wherever it is run.
    const checked = await runHookwatch(['check', '--settings', join('check settings advice', '.claude', 'settings.json')], { cwd: dir });
    expect(checked.code).toBe(1);
    const install = /Until the hook is fixed: "(.*)" wraps every command hook of it,/.exec(checked.stdout)?.[1] ?? '';
    expect(install).toBe(`${shellQuote(process.execPath)} ${shellQuote(HOOKWATCH_BIN)} guard --install ${shellQuote(path)}`);
    // That line, run by a shell as printed where hookwatch is not on PATH (as under npm), wraps the hook: checked
    // again, it is within the cap.
    const installed = await runHook(install, project, { env: { PATH: '/usr/bin:/bin' } });
    expect(installed.stdout).toContain('wrapped 1 of 1 command hook(s)');
    expect(await runHookwatch(['check', '--settings', path], { cwd: dir })).toMatchObject({ code: 0, stdout: expect.stringContaining('OK: 1 hook checked') as unknown });
  });
});
