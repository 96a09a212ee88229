/** Serves the dashboard's static files (every asset local: works offline, no CDN). */
import { fileURLToPath } from 'node:url';
import express, { type Router } from 'express';

const publicDir = fileURLToPath(new URL('./public/', import.meta.url));

export function createDashboardRouter(): Router {
  const router = express.Router();
  router.use(express.static(publicDir, { index: 'index.html', maxAge: 0 }));
  return router;
}
