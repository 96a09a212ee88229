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
 * much longer after their connections were closed.
 */
export class CuttablePool extends pg.Pool {
  private cutReason: Error | undefined;
  private readonly waiting = new Set<(err: Error) => void>();

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
    super.connect((err, client, done) => {
      if (settled) {
        // Failed by cut() already: a connection handed out after it goes back broken, never to the caller.
        if (client) done(true);
        return;
      }
      settled = true;
      this.waiting.delete(fail);
      callback(err, client, done);
    });
  }

  /** Ends the pool and fails every caller waiting for a connection now, and any later one, with `reason`. */
  cut(reason: Error): void {
    this.cutReason ??= reason;
    if (!this.ending) void this.end().catch(() => {});
    for (const fail of [...this.waiting]) fail(this.cutReason);
  }
}
