/** Ports for what cannot listen on port 0 and report the one it got (PostgreSQL, Alertmanager), or for nobody. */
import { createServer } from 'node:net';

/** A port that was free a moment ago on 127.0.0.1: nothing listens on it until something is started there. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}
