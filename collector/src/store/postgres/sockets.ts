/**
 * The sockets under a pool's or a client's connections. pg's end() sends Terminate and waits for the server to
 * close the connection, and a statement in flight waits for its answer: against a server that hangs (a frozen
 * host, a network dropping packets without a reset) both wait for ever, and so does a connection attempt without
 * a timeout. A stop that cannot wait any longer destroys the sockets instead: statements in flight reject at
 * once, end() completes, and nothing is left waiting on the server.
 */
import { Socket } from 'node:net';
import pg from 'pg';

export class ConnectionSockets {
  private readonly open = new Set<Socket>();

  /** pg's `stream` option: a plain socket (pg starts TLS over it when asked to), remembered until it closes. */
  readonly stream = (): Socket => {
    const socket = new Socket();
    this.open.add(socket);
    socket.once('close', () => this.open.delete(socket));
    return socket;
  };

  /** Destroys every socket still open; returns how many there were. */
  destroyAll(): number {
    const n = this.open.size;
    for (const socket of this.open) socket.destroy();
    this.open.clear();
    return n;
  }
}

type ConnectCallback = (err: Error | undefined, client: pg.PoolClient | undefined, done: (release?: unknown) => void) => void;

/**
 * A pool whose callers still waiting for a connection can be failed at once (cut). pg's end() hands no waiting
 * caller a connection again, yet leaves each one waiting out connectionTimeoutMillis: with every connection of a
 * busy pool stuck on a server that hangs, the batches and queries queued behind them would hold a stop that
 * much longer after their connections were closed. Its idle connections can be closed at once too (dropIdle),
 * when the database was found unreachable: the network may have dropped them without a word, and a statement sent
 * on one would wait out its whole bound. So can those in use that have heard nothing from the server since then
 * (dropSilentSince), once it answers again: what they wait for was sent into the outage.
 */
export class CuttablePool extends pg.Pool {
  private cutReason: Error | undefined;
  private readonly waiting = new Set<(err: Error) => void>();
  /** Connections idle in the pool: released, not handed out again yet. */
  private readonly idle = new Set<pg.PoolClient>();
  /** Connections closed by dropIdle or dropSilentSince: never handed out, and their loss is no news. */
  private readonly dropped = new WeakSet<pg.Client>();
  /**
   * Connections in use, with when each last heard from the server (performance.now()): handed out, or its last
   * statement answered (ReadyForQuery). One that has heard nothing since is waiting for an answer, or about to.
   */
  private readonly heardAt = new Map<pg.PoolClient, number>();

  constructor(config?: pg.PoolConfig) {
    super(config);
    this.on('connect', (client) => {
      client.connection.on('readyForQuery', () => {
        if (this.heardAt.has(client)) this.heardAt.set(client, performance.now());
      });
    });
    this.on('acquire', (client) => {
      this.idle.delete(client);
      this.heardAt.set(client, performance.now());
    });
    this.on('release', (err, client) => {
      this.heardAt.delete(client);
      if (!err) this.idle.add(client);
    });
    this.on('remove', (client) => {
      this.idle.delete(client);
      this.heardAt.delete(client);
    });
  }

  override connect(): Promise<pg.PoolClient>;
  override connect(callback: ConnectCallback): void;
  override connect(callback?: ConnectCallback): Promise<pg.PoolClient> | void {
    if (!callback) {
      return new Promise<pg.PoolClient>((resolve, reject) => {
        this.connect((err, client) => (err || !client ? reject(err ?? new Error('no connection')) : resolve(client)));
      });
    }
    if (this.cutReason) {
      callback(this.cutReason, undefined, () => {});
      return;
    }
    let settled = false;
    const fail = (err: Error): void => {
      if (settled) return;
      settled = true;
      this.waiting.delete(fail);
      callback(err, undefined, () => {});
    };
    this.waiting.add(fail);
    const take = (): void => super.connect((err, client, done) => {
      if (settled) {
        // Failed by cut() already: a connection handed out after it goes back broken, never to the caller.
        if (client) done(true);
        return;
      }
      if (client && this.dropped.has(client)) {
        // Dropped while idle, handed out before its socket's close was noticed: the pool removes it.
        done(true);
        take();
        return;
      }
      settled = true;
      this.waiting.delete(fail);
      callback(err, client, done);
    });
    take();
  }

  /**
   * Closes the connections idle now, at once, without waiting for the server (which may never answer); returns
   * how many. The next callers get new connections. Those in use are left to their statements' bounds.
   */
  dropIdle(): number {
    const n = this.idle.size;
    for (const client of this.idle) {
      this.dropped.add(client);
      client.connection.stream.destroy();
    }
    this.idle.clear();
    return n;
  }

  /**
   * Closes at once the connections in use that have heard nothing from the server since `sinceMs` (performance.now()),
   * without waiting for it; returns how many. Their statements in flight reject as on a lost connection, and their
   * callers hand them back broken. Those that heard from it since, and the idle ones, are left as they are.
   */
  dropSilentSince(sinceMs: number): number {
    let n = 0;
    for (const [client, heardAt] of this.heardAt) {
      if (heardAt > sinceMs) continue;
      this.dropped.add(client);
      client.connection.stream.destroy();
      this.heardAt.delete(client);
      n++;
    }
    return n;
  }

  /** Whether `client` was closed by dropIdle or dropSilentSince (the pool reports it lost as it removes it). */
  wasDropped(client: pg.Client | undefined): boolean {
    return client !== undefined && this.dropped.has(client);
  }

  /** Ends the pool and fails every caller waiting for a connection now, and any later one, with `reason`. */
  cut(reason: Error): void {
    this.cutReason ??= reason;
    if (!this.ending) void this.end().catch(() => {});
    for (const fail of [...this.waiting]) fail(this.cutReason);
  }
}
