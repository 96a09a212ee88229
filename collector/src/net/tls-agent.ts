/**
 * The connection pools of HTTP clients that connect with a client's TLS files (`forward.tls.*`, an alert
 * receiver's `tls`, `alerting.otlp.tls.*`): made on first use, and made again once a rotated set of files is taken
 * into use, so the connections from then on present the new client certificate and trust the new CA. One for
 * fetch (undici), one for clients built on node:https (the OpenTelemetry exporter of alert events).
 */
import type { Duplex } from 'node:stream';
import { Agent as HttpsAgent, type RequestOptions } from 'node:https';
import { Agent } from 'undici';
import type { ClientTlsCredentials } from './tls.ts';

/** Pools of rotated files kept at most (see ClientTlsAgent.retiring). */
const MAX_RETIRING = 4;

export class ClientTlsAgent {
  private readonly credentials: ClientTlsCredentials;
  /** The pool and the generation of the files it was made for. */
  private current: { pool: Agent; generation: number } | undefined;
  /**
   * Pools of rotated files, still finishing the requests they had; they take no new one, and their idle connections
   * end with their keep-alive. Not close()d: undici's destroy() does not end the requests of a pool that is closing,
   * and a stop must end them all. The oldest beyond MAX_RETIRING (rotations ago, long past any request's timeout) go.
   */
  private readonly retiring: Agent[] = [];

  constructor(credentials: ClientTlsCredentials) {
    this.credentials = credentials;
  }

  /** The pool for a request made now. */
  dispatcher(): Agent {
    const { generation } = this.credentials;
    if (this.current?.generation !== generation) {
      // Rotated files: the old pool takes no new request; those in flight finish on it.
      if (this.current) this.retiring.push(this.current.pool);
      while (this.retiring.length > MAX_RETIRING) void this.retiring.shift()?.destroy().catch(() => undefined);
      this.current = { pool: new Agent({ connect: { ...this.credentials.connectOptions() } }), generation };
    }
    return this.current.pool;
  }

  /** Closes the pools now, requests in flight included (those of rotated files too). */
  async destroy(): Promise<void> {
    const pools = [...this.retiring.splice(0), ...(this.current ? [this.current.pool] : [])];
    this.current = undefined;
    await Promise.all(pools.map((p) => p.destroy().catch(() => undefined)));
  }
}

/** The generation of the files a request's connection is made with, kept on its options so its pool stays the same. */
const FILES = Symbol('tls files generation');

/**
 * A node:https agent whose connections are made with the TLS files as they are when each is made. Connections
 * are pooled by the generation of the files too: once rotated files are taken into use, the idle connections made
 * with the old ones are closed and none of them takes a new request.
 */
export class ClientTlsHttpsAgent extends HttpsAgent {
  private readonly credentials: ClientTlsCredentials;
  private generation: number;

  constructor(credentials: ClientTlsCredentials) {
    super({ keepAlive: true });
    this.credentials = credentials;
    this.generation = credentials.generation;
  }

  override getName(options: RequestOptions & { [FILES]?: number } = {}): string {
    const { generation } = this.credentials;
    if (generation !== this.generation) {
      this.generation = generation;
      for (const sockets of Object.values(this.freeSockets)) for (const socket of sockets ?? []) socket.destroy();
    }
    // Node asks again for the name of a request's options when its connection is freed or closed: the same one.
    options[FILES] ??= generation;
    return `${super.getName(options)}:files-${options[FILES]}`;
  }

  override createConnection(options: RequestOptions, callback?: (err: Error | null, stream: Duplex) => void): Duplex | null | undefined {
    return super.createConnection({ ...options, ...this.credentials.connectOptions() }, callback);
  }
}
