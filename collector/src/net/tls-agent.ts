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

export class ClientTlsAgent {
  private readonly credentials: ClientTlsCredentials;
  /** The pool and the generation of the files it was made for. */
  private current: { pool: Agent; generation: number } | undefined;

  constructor(credentials: ClientTlsCredentials) {
    this.credentials = credentials;
  }

  /** The pool for a request made now. */
  dispatcher(): Agent {
    const { generation } = this.credentials;
    if (this.current?.generation !== generation) {
      // Rotated files: the old pool takes no new request and closes once those in flight have their answers.
      void this.current?.pool.close().catch(() => undefined);
      this.current = { pool: new Agent({ connect: { ...this.credentials.connectOptions() } }), generation };
    }
    return this.current.pool;
  }

  /** Closes the pool now, requests in flight included. */
  async destroy(): Promise<void> {
    const current = this.current;
    this.current = undefined;
    await current?.pool.destroy().catch(() => undefined);
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
