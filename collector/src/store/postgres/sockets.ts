/**
 * The sockets under a pool's or a client's connections. pg's end() sends Terminate and waits for the server to
 * close the connection, and a statement in flight waits for its answer: against a server that hangs (a frozen
 * host, a network dropping packets without a reset) both wait for ever, and so does a connection attempt without
 * a timeout. A stop that cannot wait any longer destroys the sockets instead: statements in flight reject at
 * once, end() completes, and nothing is left waiting on the server.
 */
import { Socket } from 'node:net';

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
