/**
 * A throwaway PostgreSQL cluster for tests and benchmarks: Debian's binaries, `initdb` into a temp dir, the
 * server on 127.0.0.1 and a free port, removed on stop. When run as root the cluster runs as the `postgres`
 * user (PostgreSQL refuses to run as root).
 */
import { execFile } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from '../free-port.ts';

const run = promisify(execFile);

export interface TestServerOptions {
  /** Turn fsync and synchronous_commit off (tests): faster, not crash-safe. Default true. */
  fast?: boolean;
  maxConnections?: number;
  /** Extra `-c name=value` server settings. */
  settings?: Record<string, string | number>;
}

/** How `pg_ctl` stops the server: `fast` rolls back open transactions and checkpoints, `immediate` is a crash. */
export type ShutdownMode = 'fast' | 'immediate';

export interface TestServer {
  host: string;
  port: number;
  /** The folder of the server's Unix socket (`.s.PGSQL.<port>`), the `?host=` of a socket URL. */
  socketDir: string;
  user: string;
  /** The role's password (the tests prove it never leaks). */
  password: string;
  /** postgres:// URL of a database (default: the `postgres` maintenance database). */
  url(database?: string): string;
  /** Creates an empty database and returns its URL. */
  createDatabase(name?: string): Promise<string>;
  /**
   * `pg_ctl restart` (`-m fast` unless told): every connection is cut, the server is back on the same port when
   * this resolves. `immediate` is a crash: no checkpoint, the server recovers from its WAL as it starts.
   */
  restart(mode?: ShutdownMode): Promise<void>;
  /** Stops the server (`-m fast`), runs `whileDown`, and starts it again on the same port, whatever whileDown did. */
  down<T>(whileDown: () => Promise<T>): Promise<T>;
  /**
   * SIGSTOPs the server and every one of its processes, runs `whileFrozen`, then SIGCONTs them, whatever whileFrozen
   * did: a host that hangs. Connections stay open and nothing answers; a new connection is accepted by the kernel
   * and then waits.
   */
  frozen<T>(whileFrozen: () => Promise<T>): Promise<T>;
  /** Stops the server and removes its files; safe twice. */
  stop(): Promise<void>;
}

/** The directory holding initdb and pg_ctl: $HOOKWATCH_PG_BIN, else the newest /usr/lib/postgresql/N/bin. */
export function findPostgresBin(): string {
  const fromEnv = process.env['HOOKWATCH_PG_BIN'];
  if (fromEnv) return fromEnv;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) {
    const bin = join(root, v, 'bin');
    if (existsSync(join(bin, 'initdb')) && existsSync(join(bin, 'pg_ctl'))) return bin;
  }
  throw new Error(
    'PostgreSQL server binaries not found (looked for /usr/lib/postgresql/*/bin/initdb). ' +
      'Install them with `apt-get update && apt-get install -y postgresql`, or set HOOKWATCH_PG_BIN.',
  );
}

let databaseSeq = 0;

/** The postmaster's pid and those of its children (backends, background workers), from /proc. */
function serverPids(data: string): number[] {
  const postmaster = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after the last ')'.
      const stat = readFileSync(join('/proc', entry, 'stat'), 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === postmaster) children.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return [postmaster, ...children];
}

/** Creates and starts a cluster; throws with a clear message when PostgreSQL is not installed. */
export async function startTestServer(opts: TestServerOptions = {}): Promise<TestServer> {
  const bin = findPostgresBin();
  const asRoot = userInfo().uid === 0;
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-pg-'));
  const data = join(dir, 'data');
  const pwfile = join(dir, 'pw');
  const user = 'hookwatch';
  const password = `pw-${Math.random().toString(36).slice(2)}-${Date.now().toString(36)}`;
  writeFileSync(pwfile, password + '\n', { mode: 0o600 });
  let pgUid: number | undefined;
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']).catch(() => {
      throw new Error('running as root, but there is no `postgres` user to run the test cluster as (install the postgresql package)');
    });
    pgUid = Number(stdout.trim());
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    chmodSync(dir, 0o700);
    chownSync(dir, pgUid, Number(gid.trim()));
    chownSync(pwfile, pgUid, Number(gid.trim()));
  }
  const exec = (file: string, args: string[]): Promise<{ stdout: string; stderr: string }> =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', join(bin, file), ...args], { cwd: dir }) : run(join(bin, file), args, { cwd: dir });

  const cleanup = (): void => rmSync(dir, { recursive: true, force: true });
  try {
    await exec('initdb', ['-D', data, '-U', user, '--auth=scram-sha-256', `--pwfile=${pwfile}`, '-E', 'UTF8', '--locale=C', '--no-sync']);
  } catch (err) {
    cleanup();
    throw new Error(`initdb failed: ${(err as { stderr?: string }).stderr ?? (err as Error).message}`, { cause: err });
  }
  const fast = opts.fast ?? true;
  const settings: Record<string, string | number> = {
    listen_addresses: '127.0.0.1',
    unix_socket_directories: dir,
    max_connections: opts.maxConnections ?? 200,
    shared_buffers: '128MB',
    ...(fast ? { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' } : {}),
    ...opts.settings,
  };
  let port = 0;
  let serverOptions = '';
  for (let attempt = 0; ; attempt++) {
    port = await freePort();
    const o = [`-p ${port}`, ...Object.entries(settings).map(([k, v]) => `-c ${k}=${v}`)].join(' ');
    try {
      await exec('pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-o', o, '-w', '-t', '30', 'start']);
      serverOptions = o;
      break;
    } catch (err) {
      // Another process may have taken the port between the probe and the start: try a fresh one.
      if (attempt >= 2) {
        cleanup();
        throw new Error(`pg_ctl start failed: ${(err as { stderr?: string }).stderr ?? (err as Error).message}`, { cause: err });
      }
    }
  }
  const host = '127.0.0.1';
  const url = (database = 'postgres'): string => `postgres://${user}:${encodeURIComponent(password)}@${host}:${port}/${database}`;
  let stopped: Promise<void> | undefined;
  return {
    host,
    port,
    socketDir: dir,
    user,
    password,
    url,
    async createDatabase(name?: string): Promise<string> {
      const db = name ?? `t_${process.pid}_${++databaseSeq}_${Date.now().toString(36)}`;
      if (!/^[a-z_][a-z0-9_]*$/.test(db)) throw new Error(`bad database name ${db}`);
      const client = new pg.Client({ connectionString: url() });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${db}`);
      } finally {
        await client.end();
      }
      return url(db);
    },
    async restart(mode: ShutdownMode = 'fast'): Promise<void> {
      await exec('pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-o', serverOptions, '-m', mode, '-w', '-t', '60', 'restart']);
    },
    async down<T>(whileDown: () => Promise<T>): Promise<T> {
      await exec('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '60', 'stop']);
      try {
        return await whileDown();
      } finally {
        await exec('pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-o', serverOptions, '-w', '-t', '60', 'start']);
      }
    },
    async frozen<T>(whileFrozen: () => Promise<T>): Promise<T> {
      // A backend listed may end before it is signalled (a connection closing): nothing left to freeze or wake.
      const signal = (pid: number, sig: NodeJS.Signals): void => {
        try {
          process.kill(pid, sig);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
        }
      };
      // The postmaster first: stopped, it forks no new process that would escape the freeze.
      const pids = serverPids(data);
      const rest: number[] = [];
      try {
        for (const pid of pids) signal(pid, 'SIGSTOP');
        rest.push(...serverPids(data).filter((p) => !pids.includes(p)));
        for (const pid of rest) signal(pid, 'SIGSTOP');
        return await whileFrozen();
      } finally {
        for (const pid of [...pids, ...rest]) signal(pid, 'SIGCONT');
      }
    },
    stop(): Promise<void> {
      stopped ??= (async () => {
        try {
          await exec('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
        } catch {
          // Already gone: nothing to stop.
        } finally {
          cleanup();
        }
      })();
      return stopped;
    },
  };
}

/** One statement on a connection of its own (opened and closed around it): what a test asks the database directly. */
export async function queryOnce<T extends pg.QueryResultRow>(url: string, text: string, params: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<T>(text, params)).rows;
  } finally {
    await c.end();
  }
}
