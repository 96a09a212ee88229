/** The API router alone on a real socket, over a store a test gives it (no receivers, no alerting). */
import type { AddressInfo } from 'node:net';
import express from 'express';
import { createApiRouter, parseQuery } from '../../src/api/index.ts';
import type { QueryGate } from '../../src/api/query-gate.ts';
import type { Store } from '../../src/store/store.ts';
import { silentLogger } from '../../src/telemetry/logger.ts';

export interface ApiServer {
  /** http://127.0.0.1:<port> */
  base: string;
  close(): Promise<void>;
}

/** Serves /api/v1 over `store` with the `team` dimension and a fixed clock (and the query bound given). */
export async function serveApi(store: Store, now: number, queries?: QueryGate): Promise<ApiServer> {
  const app = express();
  app.set('query parser', parseQuery);
  app.use(createApiRouter({ store, dimensions: ['team'], logger: silentLogger, now: () => now, ...(queries ? { queries } : {}) }));
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
