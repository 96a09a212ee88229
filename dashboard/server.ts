/**
 * Serves the dashboard from the same Express app as the API: every asset local (works offline, no CDN), no build
 * step. The browser code is TypeScript in dashboard/src (and the shared cap and forecast code in shared/src),
 * type-stripped by Node on first request, so the browser runs the very same forecast the alert rules use.
 */
import { createHash } from 'node:crypto';
import { readFile, readdir, stat } from 'node:fs/promises';
import { stripTypeScriptTypes } from 'node:module';
import type { ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { join, normalize, sep } from 'node:path';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { routeLayers, type RouteLayer } from '../collector/src/api/route-layers.ts';
import { echoed } from '../collector/src/request-error.ts';

const publicDir = fileURLToPath(new URL('./public/', import.meta.url));
const srcDir = fileURLToPath(new URL('./src/', import.meta.url));
const sharedDir = fileURLToPath(new URL('../shared/src/', import.meta.url));
// chart.js exports only its ESM entry; the UMD build beside it needs no import map (it sets window.Chart).
const chartJs = fileURLToPath(new URL('./chart.umd.min.js', import.meta.resolve('chart.js')));

/**
 * Second line of defence behind rendering telemetry as text: no inline script, no foreign origin.
 * Chart.js sizes its canvas through the CSSOM (element.style), which CSP does not restrict.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** Page routes the single-page app answers; each returns index.html so links can be shared and reloaded. */
export const PAGE_ROUTES = ['/', '/hooks/:id', '/alerts', '/forwarding'] as const;

/**
 * Type-strips without Node's one-time "stripTypeScriptTypes is an experimental feature" warning: hookwatch's
 * stderr is one JSON object per line, and that plain-text line would break whoever parses it.
 */
function strip(source: string): string {
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const text = typeof warning === 'string' ? warning : warning.message;
    if (text.includes('stripTypeScriptTypes')) return;
    (emitWarning as (...a: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    return stripTypeScriptTypes(source, { mode: 'strip' });
  } finally {
    process.emitWarning = emitWarning;
  }
}

interface Compiled {
  mtimeMs: number;
  js: string;
}

/** The file at `relative` under `root`, when it is one there (the path is user input: it never leaves the folder). */
async function fileUnder(root: string, relative: string): Promise<{ file: string; mtimeMs: number } | undefined> {
  const file = normalize(join(root, relative));
  if (!file.startsWith(root.endsWith(sep) ? root : root + sep)) return undefined;
  try {
    const st = await stat(file);
    return st.isFile() ? { file, mtimeMs: st.mtimeMs } : undefined;
  } catch {
    return undefined;
  }
}

/** Type-strips a .ts file under `root` once per modification time; undefined when it is not there. */
function moduleCompiler(root: string): (relative: string) => Promise<string | undefined> {
  const cache = new Map<string, Compiled>();
  return async (relative) => {
    const found = await fileUnder(root, relative);
    // Never tests.
    if (found === undefined || !found.file.endsWith('.ts') || found.file.endsWith('.test.ts')) return undefined;
    const { file, mtimeMs } = found;
    const hit = cache.get(file);
    if (hit && hit.mtimeMs === mtimeMs) return hit.js;
    const js = strip(await readFile(file, 'utf8'));
    cache.set(file, { mtimeMs, js });
    return js;
  };
}

type Compilers = Record<'/dashboard/src/' | '/shared/src/', (relative: string) => Promise<string | undefined>>;

/**
 * The module at `url` (a URL path) compiled, when `url` is under one of `compilers`' prefixes (whatever their case,
 * as the routes serving the modules match them): undefined when no such module is there. Undefined for a URL under
 * none.
 */
function moduleAt(compilers: Compilers, url: string): Promise<string | undefined> | undefined {
  const prefix = (Object.keys(compilers) as (keyof Compilers)[]).find((p) => url.toLowerCase().startsWith(p));
  return prefix === undefined ? undefined : compilers[prefix](url.slice(prefix.length));
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+'([^']+)'/g;

/** The page as served, and the build of the dashboard it is: a digest of every file the page loads from hookwatch (Chart.js too). */
interface Index {
  html: string;
  build: string;
}

/**
 * index.html with a modulepreload link for every module the entry (entry.ts) reaches: the browser fetches them at once
 * instead of discovering them import by import (a waterfall that cost seconds on a slow machine). It names its
 * build, which a page left open compares with the build hookwatch serves now (GET /dashboard/build).
 */
async function renderIndex(compilers: Compilers): Promise<Index> {
  const seen = new Map<string, string>();
  const visit = async (url: string): Promise<void> => {
    if (seen.has(url)) return;
    const js = await moduleAt(compilers, url);
    if (js === undefined) return;
    seen.set(url, js);
    const deps = [...js.matchAll(IMPORT)].map((m) => m[1] as string).filter((d) => d.startsWith('.'));
    await Promise.all(deps.map((d) => visit(new URL(d, `http://x${url}`).pathname)));
  };
  await visit('/dashboard/src/entry.ts');
  const urls = [...seen.keys()].sort();
  const digest = createHash('sha256');
  for (const u of urls) digest.update(`${u}\0${seen.get(u) ?? ''}\0`);
  for (const f of (await readdir(publicDir)).sort()) digest.update(`${f}\0`).update(await readFile(join(publicDir, f))).update('\0');
  digest.update(await readFile(chartJs));
  const build = digest.digest('hex').slice(0, 16);
  const links = urls.map((u) => `<link rel="modulepreload" href="${u}">`).join('\n');
  const html = await readFile(join(publicDir, 'index.html'), 'utf8');
  return { html: html.replace('<!--modulepreload-->', `<meta name="hookwatch-build" content="${build}">\n${links}`), build };
}

/** Whether a URL path names public/index.html, the page's template (decoded as express.static decodes it). */
function isTemplate(path: string): boolean {
  try {
    return decodeURIComponent(path).toLowerCase() === '/index.html';
  } catch {
    return false; // not valid percent-encoding
  }
}

/**
 * Where the OTLP/HTTP receiver listens, to tell an exporter pointed at this port where to send instead, and who is
 * told of the files served.
 */
export interface DashboardRouterOptions {
  /** Its port, undefined until it listens. */
  otlpHttpPort?: () => number | undefined;
  otlpHttpTls?: boolean;
  /** Told of each file served from public/ (the style sheet), and of the redirect of its template, which no route answers. */
  servedFile?: (res: ServerResponse) => void;
}

/**
 * The answer to a POST of an OTLP export here: OTEL_EXPORTER_OTLP_ENDPOINT given this port (9318 for 4318) sends
 * every export to /v1/<signal> of the HTTP port, whose client would otherwise read only that the dashboard has
 * no page or file there.
 */
function otlpOnHttpPort(method: string, path: string, opts: DashboardRouterOptions): string | undefined {
  if (method !== 'POST' || !/^\/v1\/(logs|metrics|traces)\/?$/.test(path)) return undefined;
  const port = opts.otlpHttpPort?.();
  const where = port === undefined ? 'otlp.http.addr' : `${port} (OTEL_EXPORTER_OTLP_ENDPOINT=${opts.otlpHttpTls === true ? 'https' : 'http'}://<host>:${port})`;
  return `${method} ${path}: this port serves the API and dashboard; OTLP goes to the OTLP/HTTP port, ${where}`;
}

/**
 * The answer to a conditional or range request a file cannot meet (send's 412 and 416, which it passes on as
 * errors once it has set the file's headers): that status with a JSON reason, as the API's errors, not a 500, and
 * without the file's type, validators or caching on the error. A 416 keeps the Content-Range that gives the
 * file's length (RFC 9110 section 15.5.17).
 */
function fileRefusals(): (err: unknown, req: Request, res: Response, next: NextFunction) => void {
  return (err, req, res, next) => {
    const status = (err as { status?: unknown } | undefined)?.status;
    if ((status !== 412 && status !== 416) || res.headersSent) {
      next(err);
      return;
    }
    for (const header of ['Content-Type', 'ETag', 'Last-Modified', 'Accept-Ranges']) res.removeHeader(header);
    res.setHeader('Cache-Control', 'no-store');
    if (status === 416) {
      const length = /\/(\d+)$/.exec(String(res.getHeader('Content-Range')))?.[1] ?? '?';
      res.status(416).json({ error: { code: 'range_not_satisfiable', message: `Range ${echoed(String(req.headers.range))} asks for no byte of ${echoed(req.path)}, which has ${length} bytes` } });
      return;
    }
    const given = ['If-Match', 'If-Unmodified-Since'].filter((h) => req.headers[h.toLowerCase()] !== undefined).join(' and ');
    res.status(412).json({ error: { code: 'precondition_failed', message: `${echoed(req.path)} does not meet the request's ${given}` } });
  };
}

/** Whether `decoded` (a path, percent-decoded) is a file of public/ that express.static serves (it leaves dotfiles out). */
async function publicFile(decoded: string): Promise<boolean> {
  return !decoded.split('/').some((segment) => segment.startsWith('.')) && (await fileUnder(publicDir, decoded)) !== undefined;
}

/**
 * Whether a GET of `path` (as the request has it) is answered with a file of public/ (the style sheet, the page's
 * template): no route names such a path, so whoever counts requests by route is told of it (servedFile).
 */
export async function isDashboardFile(path: string): Promise<boolean> {
  try {
    return await publicFile(decodeURIComponent(path));
  } catch {
    return false; // not valid percent-encoding
  }
}

/** The dashboard's routes: pages, its modules, the shared modules it imports, and Chart.js from node_modules. */
export function createDashboardRouter(opts: DashboardRouterOptions = {}): Router {
  const router = express.Router();
  router.use((_req: Request, res: Response, next: NextFunction) => {
    res.setHeader('Content-Security-Policy', CONTENT_SECURITY_POLICY);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    next();
  });

  const compilers = { '/dashboard/src/': moduleCompiler(srcDir), '/shared/src/': moduleCompiler(sharedDir) };
  let index: Promise<Index> | undefined;
  const rendered = (): Promise<Index> => {
    index ??= renderIndex(compilers).catch((err: unknown) => {
      index = undefined;
      throw err;
    });
    return index;
  };
  const sendIndex = (_req: Request, res: Response, next: NextFunction): void => {
    rendered().then(({ html }) => {
      res.setHeader('Cache-Control', 'no-cache');
      res.type('html').send(html);
    }, next);
  };
  for (const route of PAGE_ROUTES) router.get(route, sendIndex);
  // The page's template is a file of public/, but the page is `/`: the app reads its view from the path (it has
  // none at /index.html), and only `/` carries the build and preloads. The template is never served as a file,
  // however its name is spelt (`/%69ndex.html`, as express.static decodes it); the query (a view's range) is kept.
  router.use((req: Request, res: Response, next: NextFunction) => {
    if ((req.method !== 'GET' && req.method !== 'HEAD') || !isTemplate(req.path)) {
      next();
      return;
    }
    opts.servedFile?.(res);
    const query = req.originalUrl.indexOf('?');
    res.redirect(301, query === -1 ? '/' : `/${req.originalUrl.slice(query)}`);
  });
  // The build served now: a page opened before a new version was deployed sees that it runs the old one.
  router.get('/dashboard/build', (_req: Request, res: Response, next: NextFunction) => {
    rendered().then(({ build }) => {
      res.setHeader('Cache-Control', 'no-cache');
      res.json({ build });
    }, next);
  });

  const serveModules = (prefix: '/dashboard/src' | '/shared/src'): void => {
    const compile = compilers[`${prefix}/`];
    router.get(`${prefix}/*path`, async (req: Request, res: Response, next: NextFunction) => {
      try {
        const parts = (req.params as { path?: string[] }).path ?? [];
        const js = await compile(parts.join('/'));
        if (js === undefined) {
          next();
          return;
        }
        res.type('text/javascript; charset=utf-8').setHeader('Cache-Control', 'no-cache');
        res.send(js);
      } catch (err) {
        next(err);
      }
    });
  };
  serveModules('/dashboard/src');
  serveModules('/shared/src');

  router.get('/vendor/chart.umd.min.js', (_req: Request, res: Response, next: NextFunction) => {
    res.setHeader('Cache-Control', 'public, max-age=3600');
    res.sendFile(chartJs, (err) => {
      if (err) next(err);
    });
  });
  // No redirect of the folder itself (`/.`) to `/./`: no index is served there, so it only led to the 404 below.
  router.use(express.static(publicDir, { index: false, redirect: false, maxAge: 0, ...(opts.servedFile ? { setHeaders: opts.servedFile } : {}) }));
  router.use(fileRefusals());
  const notFound = (res: Response, message: string): void => void res.status(404).json({ error: { code: 'not_found', message } });
  const noSuchPath = (path: string): string => `no page or file at ${echoed(path)}; the API is under /api/v1`;
  // Any other path a browser opens as a page: the dashboard's own "No such page" with a 404, not Express's bare
  // "Cannot GET". Anything else (a file, a module, a script's request) gets the API's JSON 404: a script URL
  // answered with HTML would only confuse, and a client that did not ask for HTML reads the same error as elsewhere.
  router.get('/*path', (req: Request, res: Response, next: NextFunction) => {
    const asset = /^\/(api|dashboard|shared|vendor)(\/|$)/.test(req.path) || /\.[a-z0-9]+$/i.test(req.path);
    if (!asset) res.vary('Accept');
    if (asset || req.accepts(['json', 'html']) !== 'html') {
      notFound(res, noSuchPath(req.path));
      return;
    }
    res.status(404);
    sendIndex(req, res, next);
  });

  /**
   * Whether a GET of `path` is served: a page, the build or Chart.js (each a route; the catch-all above is not
   * one), a module there is, or a file of public/ (express.static leaves dotfiles out).
   */
  const serves = async (path: string): Promise<boolean> => {
    const routed = (layer: RouteLayer & { route: { path: unknown } }): boolean => {
      try {
        return !String(layer.route.path).includes('*') && Boolean(layer.match?.(path));
      } catch {
        return false; // not valid percent-encoding
      }
    };
    if (routeLayers(router.stack as RouteLayer[]).some(routed)) return true;
    let decoded: string;
    try {
      decoded = decodeURIComponent(path);
    } catch {
      return false;
    }
    const compiled = moduleAt(compilers, decoded);
    if (compiled) return (await compiled) !== undefined;
    return publicFile(decoded);
  };
  // Another method on a path the dashboard serves: a JSON 405 like the API's, not Express's HTML "Cannot POST";
  // OPTIONS there (a file, which no route names) 204 with the same Allow, as on every route. On a path it does not
  // serve, whatever the method, the 404 a GET there gets: the path is what to change, not the method.
  router.use((req: Request, res: Response, next: NextFunction) => {
    // A GET of a target that is no path (`*`, which the catch-all does not match) is answered here too.
    if ((req.method === 'GET' || req.method === 'HEAD') && req.path.startsWith('/')) {
      next();
      return;
    }
    const otlp = otlpOnHttpPort(req.method, req.path, opts);
    serves(req.path).then((served) => {
      if (!served) notFound(res, otlp ?? noSuchPath(req.path));
      else if (req.method === 'OPTIONS') res.status(204).set('allow', 'GET, HEAD').end();
      else res.status(405).set('allow', 'GET, HEAD').json({ error: { code: 'method_not_allowed', message: `${req.method} ${echoed(req.path)}: the dashboard answers GET and HEAD; the API is under /api/v1` } });
    }, next);
  });
  return router;
}
