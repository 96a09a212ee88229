/**
 * POST /-/reload reads the configuration again and applies it, as Prometheus' and Alertmanager's do: 200 with the
 * settings that changed but need a restart, 400 naming the problem when the configuration is invalid (the running
 * one is kept), 503 with Retry-After once hookwatch has begun to stop; 400 naming a query parameter, which it takes
 * none of (nothing is read then). Any other method is 405. Mounted behind the HTTP port's authentication and
 * cross-site-write refusal.
 */
import express, { type Router } from 'express';
import { ConfigError } from '../config/setting.ts';
import { ReloadStoppingError, ReloadUnavailableError, type ReloadResult } from '../config-reload.ts';
import { unavailable } from './index.ts';
import { onlyParams } from './params.ts';

export interface ReloadApiOptions {
  reload(): Promise<ReloadResult>;
}

export function createReloadRouter(opts: ReloadApiOptions): Router {
  const router = express.Router();
  router.post('/-/reload', (req, res, next) => {
    // As the API's routes: a parameter (a `dryRun` hookwatch has not) is refused, not read as a reload asked for.
    onlyParams(req.query as Record<string, unknown>, []);
    opts.reload().then(
      (result) => {
        res.json({ status: 'success', restartRequired: result.restartRequired });
      },
      (err: unknown) => {
        if (err instanceof ConfigError) res.status(400).json({ error: { code: 'invalid_config', message: err.message } });
        else if (err instanceof ReloadUnavailableError) res.status(409).json({ error: { code: 'reload_unavailable', message: err.message } });
        else if (err instanceof ReloadStoppingError) unavailable(res, err.message);
        else next(err);
      },
    );
  });
  router.all('/-/reload', (_req, res) => {
    res.status(405).set('allow', 'POST').json({ error: { code: 'method_not_allowed', message: 'POST /-/reload to reload the configuration' } });
  });
  return router;
}
