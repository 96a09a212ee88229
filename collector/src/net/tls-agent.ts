/**
 * The connection pool of an HTTP client that connects with a client's TLS files (`forward.tls.*`, an alert
 * receiver's `tls`): made on first use, and made again once a rotated set of files is taken into use, so the
 * connections from then on present the new client certificate and trust the new CA.
 */
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
