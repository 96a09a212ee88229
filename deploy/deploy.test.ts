/**
 * Everything shipped for deploying hookwatch agrees with the app: the Dockerfile, docker-compose.yml, the
 * Collector configs, the Kubernetes manifests and the Prometheus files name only settings the config schema
 * knows, use its default ports, keep data where the image's volume is, and reference files that exist.
 * No Docker engine runs here; Debian's docker-compose, Prometheus's promtool and kubectl validate when installed.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { loadConfig, toConfig } from '../collector/src/config/index.ts';
import { SETTINGS } from '../collector/src/config/schema.ts';
import { isServiceLinkName } from '../collector/src/config/env-names.ts';
import { jsonThreadLimits } from '../collector/src/otlp/json-thread.ts';
import { REJECT_REASONS, type RejectReason } from '../collector/src/receiver/options.ts';
import { heapLimits } from '../collector/src/worker-thread.ts';
import { hasPromtool, parseExposition } from '../collector/test/support/prometheus-text.ts';
import { startServiceUnderTest, type ServiceUnderTest } from '../collector/test/support/service.ts';
import { requireTool, runs } from '../collector/test/required-tool.ts';
import { tempDir, withHost } from '../collector/test/helpers.ts';
import { HAVE_OPENSSL, certAuthority, issue } from '../collector/test/support/certs.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const read = (p: string): string => readFileSync(join(ROOT, p), 'utf8');
// Under CI=true a missing tool fails here; .ci/run installs each of them.
const hasCompose = requireTool(runs('docker-compose', ['version']), 'docker-compose', 'apt-get install docker-compose');
const hasAmtool = requireTool(runs('amtool', ['--version']), 'amtool', 'apt-get install prometheus-alertmanager');
const hasKubectl = requireTool(runs('kubectl', ['version', '--client']), 'kubectl (for kubectl kustomize)', 'bash .ci/install-kubectl');

const KNOWN_ENV = new Set(SETTINGS.flatMap((s) => (s.env ? [s.env] : [])).concat('HOOKWATCH_CONFIG'));
/** Default port of each listen address, by environment variable. */
const DEFAULT_PORTS = new Map(SETTINGS.filter((s) => s.type === 'addr' && s.env).map((s) => [s.env as string, Number(String(s.default).split(':').pop())]));
const HTTP_PORT = DEFAULT_PORTS.get('HOOKWATCH_HTTP_ADDR') as number;
const OTLP_HTTP_PORT = DEFAULT_PORTS.get('HOOKWATCH_OTLP_HTTP_ADDR') as number;
const SHUTDOWN_MS = SETTINGS.find((s) => s.key === 'shutdown.timeout')?.default as number;
/** Settings whose default is a file under ./data/: in a container they must live on the data volume. */
const DATA_FILE_ENVS = SETTINGS.filter((s) => s.env && typeof s.default === 'string' && s.default.startsWith('./data/')).map((s) => s.env as string);
/** How long a hookwatch child process may take to log its start. */
const START_WAIT_MS = 30_000;

/** Stops a child process that has not exited: SIGTERM, then SIGKILL if it has not exited 10 s later. */
async function stopChild(child: ChildProcess | undefined, exited: Promise<unknown>): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const within = (ms: number): Promise<boolean> => {
    let timer: NodeJS.Timeout | undefined;
    return Promise.race([exited.then(() => true), new Promise<boolean>((resolve) => { timer = setTimeout(() => resolve(false), ms); })]).finally(() => clearTimeout(timer));
  };
  child.kill('SIGTERM');
  if (await within(10_000)) return;
  child.kill('SIGKILL');
  await within(10_000);
}

type Doc = Record<string, unknown>;
const obj = (v: unknown): Doc => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Doc) : {});
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** Checks names and values of HOOKWATCH_* variables; returns the problems found. */
function envProblems(where: string, env: Record<string, unknown>): string[] {
  const problems: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith('HOOKWATCH_')) continue;
    if (!KNOWN_ENV.has(name)) problems.push(`${where}: ${name} is not a hookwatch setting`);
    const port = DEFAULT_PORTS.get(name);
    if (port !== undefined && typeof value === 'string' && value !== `0.0.0.0:${port}`) problems.push(`${where}: ${name}=${value}, expected 0.0.0.0:${port} inside a container`);
  }
  return problems;
}

/**
 * Loads the configuration a container would get: its HOOKWATCH_* variables (compose `${VAR:-default}` take
 * their default) and, when HOOKWATCH_CONFIG is set, the given file text. Throws like hookwatch would at start.
 */
function startsWith(env: Record<string, unknown>, configText?: string): void {
  const vars: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    if (!k.startsWith('HOOKWATCH_') || typeof v !== 'string') continue;
    vars[k] = v.replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1');
  }
  toConfig(loadConfig({ env: vars, readFile: () => configText ?? '' }));
}

function loadsStrictly(file: string): void {
  // The real loader: unknown keys and bad values throw, naming the key.
  toConfig(loadConfig({ flags: { config: join(ROOT, file) }, env: {} }));
}

// ---------------------------------------------------------------------------------------------------------

interface Instruction {
  op: string;
  args: string;
  stage: number;
}

function dockerfile(): Instruction[] {
  const out: Instruction[] = [];
  let stage = -1;
  const joined = read('Dockerfile').replace(/\\\n/g, ' ');
  for (const raw of joined.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = /^(\w+)\s+(.*)$/.exec(line);
    if (!m) continue;
    const op = (m[1] as string).toUpperCase();
    if (op === 'FROM') stage++;
    out.push({ op, args: (m[2] as string).trim(), stage });
  }
  return out;
}

function envOf(instructions: Instruction[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const i of instructions.filter((x) => x.op === 'ENV')) {
    for (const m of i.args.matchAll(/([A-Z_][A-Z0-9_]*)=("[^"]*"|\S+)/g)) env[m[1] as string] = (m[2] as string).replace(/^"|"$/g, '');
  }
  return env;
}

/** .dockerignore as the builder reads it: last matching pattern wins, `!` re-includes. */
function dockerignored(path: string): boolean {
  const rules = read('.dockerignore').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  let ignored = false;
  for (const rule of rules) {
    const negate = rule.startsWith('!');
    const pattern = (negate ? rule.slice(1) : rule).replace(/\/$/, '');
    const re = new RegExp('^' + pattern.split('/').map((part) => (part === '**' ? '.*' : part.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*'))).join('/').replace(/\.\*\//g, '(.*/)?') + '(/.*)?$');
    if (re.test(path)) ignored = !negate;
  }
  return ignored;
}

/** Runtime imports of a TypeScript/JavaScript file (type-only imports are erased, so they do not count). */
function runtimeImports(source: string): string[] {
  const specs: string[] = [];
  const patterns = [
    /^\s*import\s+(?!type\s)[^;]*?\bfrom\s+['"]([^'"]+)['"]/gm,
    /^\s*export\s+(?!type\s)[^;]*?\bfrom\s+['"]([^'"]+)['"]/gm,
    /^\s*import\s+['"]([^'"]+)['"]/gm,
    /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g,
    /\bimport\.meta\.resolve\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  for (const re of patterns) for (const m of source.matchAll(re)) specs.push(m[1] as string);
  return specs;
}

describe('Dockerfile', () => {
  const ins = dockerfile();
  const final = Math.max(...ins.map((i) => i.stage));
  const finalIns = ins.filter((i) => i.stage === final);
  const env = envOf(finalIns);

  it('is multi-stage on Node 24 slim, installs production dependencies with npm ci, and runs as a non-root uid', () => {
    expect(final).toBeGreaterThanOrEqual(1);
    const arg = ins.find((i) => i.op === 'ARG' && i.args.startsWith('NODE_IMAGE='));
    expect(arg?.args).toMatch(/^NODE_IMAGE=node:24(\.\d+)*-slim/);
    // The Node the tests run on (the pinned `node` devDependency), not whatever node:24-slim names at build time:
    // a floating tag builds a different Node each month, or an old one from a builder's cache.
    const tested = (JSON.parse(read('package.json')) as { devDependencies: Record<string, string> }).devDependencies['node'];
    expect(tested).toMatch(/^24\.\d+\.\d+$/);
    expect(arg?.args).toBe(`NODE_IMAGE=node:${tested as string}-slim`);
    expect(read('docs/deploy.md')).toContain(`(\`node:${tested as string}-slim\``);
    for (const from of ins.filter((i) => i.op === 'FROM')) expect(from.args).toMatch(/^\$\{NODE_IMAGE\}/);
    expect(ins.some((i) => i.op === 'RUN' && /npm ci\b.*--omit=dev/.test(i.args))).toBe(true);
    const user = finalIns.filter((i) => i.op === 'USER').pop()?.args ?? '';
    expect(user).toMatch(/^[1-9]\d*(:\d+)?$/);
  });

  it('sets only known HOOKWATCH_* variables, listens on 0.0.0.0 at the default ports, and EXPOSEs exactly them', () => {
    expect(envProblems('Dockerfile ENV', env)).toEqual([]);
    for (const [name, port] of DEFAULT_PORTS) expect(env[name], name).toBe(`0.0.0.0:${port}`);
    const exposed = finalIns.filter((i) => i.op === 'EXPOSE').flatMap((i) => i.args.split(/\s+/).map((p) => Number(p.split('/')[0]))).sort();
    expect(exposed).toEqual([...DEFAULT_PORTS.values()].sort());
  });

  it('its ENV values load with the strict config loader', () => {
    startsWith(env);
  });

  it('keeps the store and every other data file on the VOLUME', () => {
    const volume = finalIns.find((i) => i.op === 'VOLUME')?.args ?? '';
    const dir = (JSON.parse(volume.startsWith('[') ? volume : JSON.stringify([volume])) as string[])[0] as string;
    expect(dir).toBe('/data');
    expect(DATA_FILE_ENVS).toContain('HOOKWATCH_DB');
    for (const name of DATA_FILE_ENVS) expect(posix.dirname(env[name] ?? '(unset: would write under /app/data)'), name).toBe(dir);
    expect(finalIns.some((i) => i.op === 'RUN' && i.args.includes(`chown ${finalIns.filter((x) => x.op === 'USER').pop()?.args} ${dir}`))).toBe(true);
  });

  it('runs node directly (PID 1 gets SIGTERM) and health-checks /healthz with a script the image contains', () => {
    const entry = JSON.parse(finalIns.find((i) => i.op === 'ENTRYPOINT')?.args ?? '[]') as string[];
    expect(entry[0]).toBe('node');
    expect(existsSync(join(ROOT, entry[1] ?? 'missing'))).toBe(true);
    expect(finalIns.find((i) => i.op === 'STOPSIGNAL')?.args ?? 'SIGTERM').toBe('SIGTERM');
    const health = finalIns.find((i) => i.op === 'HEALTHCHECK')?.args ?? '';
    const script = /"(deploy\/docker\/[^"]+\.mjs)"/.exec(health)?.[1];
    expect(script).toBeDefined();
    expect(ins.some((i) => i.op === 'COPY' && i.args.includes(script as string))).toBe(true);
  });

  it('the pages start the server with a stop timeout above shutdown.timeout (docker stop kills after 10 s by default)', () => {
    // The image cannot set it: Docker gives a container 10 s after SIGTERM unless `docker run --stop-timeout` says
    // otherwise, and kills hookwatch mid-drain (the default shutdown.timeout is 25 s).
    const pages = ['README.md', 'docs/deploy.md'];
    const runs = pages.flatMap((f) => read(f).split('\n').filter((l) => /^docker run .*hookwatch:\S+$/.test(l)));
    expect(runs.length).toBeGreaterThan(0);
    for (const run of runs) {
      const timeout = /--stop-timeout[ =](\d+)\b/.exec(run)?.[1];
      expect(Number(timeout ?? 10) * 1000, run).toBeGreaterThan(SHUTDOWN_MS);
    }
  });

  it('the pages publish the HTTP port on the host\'s loopback only, unless the command sets http.auth', () => {
    // `-p 9318:9318` publishes the dashboard and API on every interface of the host, with no credentials asked.
    const pages = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
    const runs = pages.flatMap((f) => read(f).split('\n').filter((l) => /\bdocker run\b.* (-p|--publish)[ =]/.test(l)));
    expect(runs.length).toBeGreaterThan(0);
    const http = runs.flatMap((run) => [...run.matchAll(/(?:-p|--publish)[ =](\S+)/g)].map((m) => m[1] as string).filter((p) => p.endsWith(`:${HTTP_PORT}`)).map((p) => ({ run, p })));
    expect(http.length).toBeGreaterThan(0);
    expect(http.filter(({ run, p }) => p !== `127.0.0.1:${HTTP_PORT}:${HTTP_PORT}` && !run.includes('HOOKWATCH_HTTP_AUTH_MODE='))).toEqual([]);
  });

  it('copies sources that exist and that .dockerignore lets through; nothing else (no .git, data or node_modules)', () => {
    const sources = ins.filter((i) => i.op === 'COPY' && !i.args.startsWith('--from')).flatMap((i) => i.args.replace(/--\S+/g, '').trim().split(/\s+/).slice(0, -1));
    expect(sources.length).toBeGreaterThan(3);
    for (const s of sources) {
      expect(existsSync(join(ROOT, s)), s).toBe(true);
      expect(dockerignored(s), `${s} is excluded by .dockerignore`).toBe(false);
    }
    for (const p of ['.git', 'node_modules/express/package.json', 'data/hookwatch.db', 'collector/testdata/x', 'collector/src/service.test.ts', 'collector/test/support/service.ts', '.env']) expect(dockerignored(p), p).toBe(true);
  });

  it('contains every file the server imports, and needs no devDependency at run time (npm ci --omit=dev)', () => {
    const copied = ins.filter((i) => i.op === 'COPY' && i.stage !== final).flatMap((i) => i.args.replace(/--\S+/g, '').trim().split(/\s+/).slice(0, -1));
    const pkg = JSON.parse(read('package.json')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };
    const seen = new Set<string>();
    const queue = ['collector/src/main.ts', ...(JSON.parse(finalIns.find((i) => i.op === 'HEALTHCHECK')?.args.replace(/^.*CMD\s+/, '') ?? '[]') as string[]).filter((a) => a.endsWith('.mjs'))];
    const missingPackages = new Set<string>();
    while (queue.length) {
      const file = queue.pop() as string;
      if (seen.has(file)) continue;
      seen.add(file);
      expect(copied.some((c) => file === c || file.startsWith(c + '/')), `${file} is not copied into the image`).toBe(true);
      expect(file.endsWith('.test.ts'), `the server imports a test file: ${file}`).toBe(false);
      for (const spec of runtimeImports(read(file))) {
        if (spec.startsWith('node:')) continue;
        if (spec.startsWith('.')) {
          const target = posix.normalize(posix.join(posix.dirname(file), spec));
          if (target === 'package.json') continue; // copied from the deps stage
          expect(existsSync(join(ROOT, target)), `${file} imports missing ${spec}`).toBe(true);
          if (/\.(ts|mjs|js)$/.test(target)) queue.push(target);
          continue;
        }
        const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : (spec.split('/')[0] as string);
        if (!(name in pkg.dependencies)) missingPackages.add(`${name} (imported by ${file})`);
      }
    }
    expect(seen.size).toBeGreaterThan(20);
    expect([...missingPackages], 'runtime imports of packages that are not production dependencies').toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------------------

describe('docker-compose.yml', () => {
  const compose = obj(parseYaml(read('docker-compose.yml')));
  const services = obj(compose['services']);
  const envOfService = (name: string): Record<string, unknown> => obj(obj(services[name])['environment']);
  const mounts = (name: string): { source: string; target: string }[] => arr(obj(services[name])['volumes']).map((v) => {
    const [source = '', target = ''] = String(v).split(':');
    return { source, target };
  });

  it('names the stack\'s project in every docker-compose command shown, as docs/deploy.md starts it', () => {
    // Started with `-p hookwatch`, the stack is that project: a command without it acts on the project named
    // after the folder of the checkout, and stops, shows or starts another stack (or nothing) there.
    const shown = ['docs/deploy.md', 'README.md', 'docker-compose.yml', 'deploy/compose/hookwatch.yaml', 'deploy/prometheus/prometheus.yml',
      'deploy/prometheus/alertmanager.yml', 'deploy/grafana/provisioning/datasources/prometheus.yml'];
    expect(read('docs/deploy.md')).toContain('docker-compose -p hookwatch up -d --build');
    const unnamed = shown.flatMap((f) => read(f).split('\n').flatMap((line, i) =>
      [...line.matchAll(/docker-compose (?!-p hookwatch )[-a-z][^`\n]*/g)].map((m) => `${f}:${i + 1}: ${m[0]}`)));
    expect(unnamed).toEqual([]);
  });

  it.skipIf(!hasCompose)('passes `docker-compose config -q` (skipped only outside CI without Debian\'s docker-compose)', () => {
    const r = spawnSync('docker-compose', ['-f', 'docker-compose.yml', 'config', '-q'], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('runs hookwatch, PostgreSQL, an OpenTelemetry Collector (contrib) and a webhook receiver', () => {
    expect(Object.keys(services)).toEqual(expect.arrayContaining(['hookwatch', 'postgres', 'otel-collector', 'webhook-echo']));
    expect(String(obj(services['otel-collector'])['image'])).toMatch(/^otel\/opentelemetry-collector-contrib:\d+\.\d+\.\d+$/);
    expect(String(obj(services['postgres'])['image'])).toMatch(/^postgres:\d+/);
  });

  it('runs webhook-echo on the Node image the hookwatch image is built on, pinned, not a tag that moves every month', () => {
    const nodeImage = /^NODE_IMAGE=(\S+)$/.exec(dockerfile().find((i) => i.op === 'ARG' && i.args.startsWith('NODE_IMAGE='))?.args ?? '')?.[1];
    expect(nodeImage).toMatch(/^node:\d+\.\d+\.\d+-slim$/);
    expect(obj(services['webhook-echo'])['image']).toBe(nodeImage);
  });

  it('sets only known HOOKWATCH_* variables in every service, with the default ports on 0.0.0.0', () => {
    for (const name of Object.keys(services)) expect(envProblems(`service ${name}`, envOfService(name))).toEqual([]);
  });

  it('points hookwatch at the PostgreSQL service, keeps other data on the image volume, and drains within stop_grace_period', () => {
    const env = envOfService('hookwatch');
    const pg = obj(services['postgres']);
    const pgEnv = obj(pg['environment']);
    const db = new URL(String(env['HOOKWATCH_DB']).replace(/\$\{[^}]*\}/g, 'x'));
    expect(db.protocol).toBe('postgres:');
    expect(db.hostname).toBe('postgres');
    expect(db.username).toBe(pgEnv['POSTGRES_USER']);
    expect(db.pathname).toBe(`/${String(pgEnv['POSTGRES_DB'])}`);
    expect(String(env['HOOKWATCH_DB'])).toContain('${POSTGRES_PASSWORD');
    expect(mounts('hookwatch').some((m) => m.target === '/data')).toBe(true);
    expect(Object.keys(obj(obj(services['hookwatch'])['depends_on']))).toContain('postgres');
    const grace = /^(\d+)s$/.exec(String(obj(services['hookwatch'])['stop_grace_period']));
    expect(Number(grace?.[1]) * 1000).toBeGreaterThan(SHUTDOWN_MS);
  });

  it('answers on its published loopback port only the names the stack reaches it by: a page rebound to 127.0.0.1 gets 403', async () => {
    // hookwatch listens on 0.0.0.0 in its container, so only a list of names turns the Host check on; the port is
    // published on the host's loopback, which a web page reaches through its own name rebound to 127.0.0.1.
    const env = envOfService('hookwatch');
    const allowed = String(env['HOOKWATCH_HTTP_ALLOWED_HOSTS'] ?? '');
    const prometheus = obj(parseYaml(read('deploy/prometheus/prometheus.yml')));
    const scraped = arr(prometheus['scrape_configs']).flatMap((job) => arr(obj(job)['static_configs']).flatMap((sc) => arr(obj(sc)['targets']).map(String)));
    const collector = obj(parseYaml(read('deploy/otel-collector/fan-out.yaml')));
    const sent = Object.values(obj(collector['exporters'])).map((e) => String(obj(e)['endpoint'] ?? '')).filter((e) => e.includes('hookwatch'));
    expect(scraped).toContain(`hookwatch:${HTTP_PORT}`);
    expect(sent).toEqual([`http://hookwatch:${OTLP_HTTP_PORT}`]);
    const s = await startServiceUnderTest({ HOOKWATCH_HTTP_ADDR: '0.0.0.0:0', HOOKWATCH_OTLP_HTTP_ADDR: '0.0.0.0:0', HOOKWATCH_HTTP_ALLOWED_HOSTS: allowed });
    try {
      const http = `http://127.0.0.1:${s.httpAddress.port}`;
      const otlp = `http://127.0.0.1:${s.otlpHttpAddress.port}`;
      const rebound = `rebind.evil.example:${s.httpAddress.port}`;
      const hooks = await withHost(`${http}/api/v1/hooks`, rebound);
      expect(hooks.status).toBe(403);
      expect(JSON.parse(hooks.body)).toEqual({ error: { code: 'forbidden', message: 'host "rebind.evil.example" is not allowed: add it to http.allowedHosts to reach hookwatch by that name' } });
      const silence = JSON.stringify({ matchers: [{ name: 'hook_name', value: 'PostToolUse:Bash' }], endsAt: new Date(Date.now() + 3_600_000).toISOString(), createdBy: 'page', comment: 'muted' });
      const post = await withHost(`${http}/api/v1/silences`, rebound, { method: 'POST', headers: { 'content-type': 'application/json', origin: `http://${rebound}`, 'sec-fetch-site': 'same-origin' }, body: silence });
      expect(post.status).toBe(403);
      expect(JSON.parse((await withHost(`${http}/api/v1/silences`, `localhost:${s.httpAddress.port}`)).body)).toMatchObject({ silences: [], total: 0 });
      // What the stack and its users send: the browser on the host, Prometheus' target, the Collector's endpoint.
      expect((await withHost(`${http}/api/v1/hooks`, `localhost:${s.httpAddress.port}`)).status).toBe(200);
      for (const target of scraped) expect((await withHost(`${http}/metrics`, target)).status, target).toBe(200);
      const logs = { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ resourceLogs: [] }) };
      for (const endpoint of sent) expect((await withHost(`${otlp}/v1/logs`, new URL(endpoint).host, logs)).status, endpoint).toBe(200);
      expect((await withHost(`${otlp}/v1/logs`, `rebind.evil.example:${s.otlpHttpAddress.port}`, logs)).status).toBe(403);
    } finally {
      await s.close();
    }
  });

  it('runs hookwatch as the Kubernetes Deployment does: read-only root with writable /data and /tmp, no capabilities, no privilege gain', () => {
    const hookwatch = obj(services['hookwatch']);
    expect(hookwatch['read_only']).toBe(true);
    expect(mounts('hookwatch').find((m) => m.target === '/data')?.source).toBe('hookwatch-data');
    expect(arr(hookwatch['tmpfs']).map(String)).toContain('/tmp');
    expect(arr(hookwatch['cap_drop'])).toEqual(['ALL']);
    expect(hookwatch['cap_add']).toBeUndefined();
    expect(arr(hookwatch['security_opt'])).toContain('no-new-privileges:true');
  });

  it('bounds hookwatch\'s memory as the Kubernetes Deployment does: its memory limit and the heap flag in NODE_OPTIONS', () => {
    // Without a limit a container takes what the host has; without the flag Node sizes the heap from the host's memory.
    const hookwatch = obj(services['hookwatch']);
    const deployment = obj(parseYaml(read('deploy/kubernetes/base/deployment.yaml')));
    const container = obj(arr(obj(obj(obj(deployment['spec'])['template'])['spec'])['containers'])[0]);
    const env = Object.fromEntries(arr(container['env']).map(obj).map((e) => [String(e['name']), e['value']]));
    const limit = String(obj(obj(container['resources'])['limits'])['memory']);
    expect(limit).toMatch(/^\d+Gi$/);
    expect(String(hookwatch['mem_limit'])).toBe(`${Number.parseInt(limit, 10)}g`);
    expect(String(env['NODE_OPTIONS'])).toMatch(/--max-old-space-size=\d+/);
    expect(envOfService('hookwatch')['NODE_OPTIONS']).toBe(env['NODE_OPTIONS']);
  });

  it('runs webhook-echo locked down as hookwatch is: a non-root uid, read-only root, no capabilities, no privilege gain', () => {
    // The node image's default user is root; the echo service writes nothing and listens above 1024.
    const echo = obj(services['webhook-echo']);
    expect(String(echo['user'])).toMatch(/^[1-9]\d*(:\d+)?$/);
    expect(Number(envOfService('webhook-echo')['PORT'])).toBeGreaterThan(1024);
    expect(echo['read_only']).toBe(true);
    expect(arr(echo['cap_drop'])).toEqual(['ALL']);
    expect(echo['cap_add']).toBeUndefined();
    expect(arr(echo['security_opt'])).toContain('no-new-privileges:true');
  });

  it('mounts files that exist; hookwatch\'s config file loads strictly and its webhook receiver is the echo service', () => {
    for (const name of Object.keys(services)) {
      for (const m of mounts(name).filter((x) => x.source.startsWith('./'))) expect(existsSync(join(ROOT, m.source)), `${name}: ${m.source}`).toBe(true);
    }
    const configTarget = String(envOfService('hookwatch')['HOOKWATCH_CONFIG']);
    const configFile = mounts('hookwatch').find((m) => m.target === configTarget)?.source;
    expect(configFile).toBeDefined();
    loadsStrictly(configFile as string);
    // The whole environment plus the file, as the container starts.
    startsWith(envOfService('hookwatch'), read(configFile as string));
    const receivers = arr(obj(obj(parseYaml(read(configFile as string)))['alerting'])['receivers']).map(obj);
    const echoPort = String(envOfService('webhook-echo')['PORT']);
    expect(receivers.map((r) => new URL(String(r['url'])).host)).toContain(`webhook-echo:${echoPort}`);
  });

  it('sends the alerts of the Prometheus rules to an Alertmanager of the same profile, which sends them to webhook-echo', () => {
    // Without an alerting section Prometheus evaluates the rules' alerts and sends them nowhere.
    const prometheus = obj(services['prometheus']);
    const am = obj(services['alertmanager']);
    expect(String(am['image'])).toMatch(/^prom\/alertmanager:v\d+\.\d+\.\d+$/);
    expect(arr(am['profiles'])).toEqual(arr(prometheus['profiles']));
    expect(arr(prometheus['depends_on'])).toContain('alertmanager');
    const promConfig = obj(parseYaml(read(mounts('prometheus').find((m) => m.target === '/etc/prometheus/prometheus.yml')?.source ?? 'missing')));
    const alertmanagers = arr(obj(promConfig['alerting'])['alertmanagers']).map(obj);
    const targets = alertmanagers.flatMap((a) => arr(a['static_configs']).flatMap((c) => arr(obj(c)['targets']).map(String)));
    const amPort = String(arr(am['ports'])[0]).split(':').pop();
    expect(targets).toEqual([`alertmanager:${amPort}`]);
    // Alertmanager reads the mounted file; its receivers are the echo service, which prints what arrives.
    const configPath = arr(am['command']).map(String).find((a) => a.startsWith('--config.file='))?.slice('--config.file='.length);
    const source = mounts('alertmanager').find((m) => m.target === configPath)?.source;
    expect(source).toBe('./deploy/prometheus/alertmanager.yml');
    const amConfig = obj(parseYaml(read(source as string)));
    const receivers = arr(amConfig['receivers']).map(obj);
    expect(receivers.map((r) => r['name'])).toContain(obj(amConfig['route'])['receiver']);
    const urls = receivers.flatMap((r) => arr(r['webhook_configs']).map((w) => new URL(String(obj(w)['url']))));
    expect(urls.length).toBeGreaterThan(0);
    for (const u of urls) expect(u.host).toBe(`webhook-echo:${String(envOfService('webhook-echo')['PORT'])}`);
  });

  it.skipIf(!hasAmtool)('amtool accepts the stack\'s Alertmanager config (skipped only outside CI without amtool)', () => {
    const r = spawnSync('amtool', ['check-config', 'alertmanager.yml'], { cwd: join(ROOT, 'deploy/prometheus'), encoding: 'utf8', timeout: 30_000 });
    expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
  });

  it('publishes the Collector\'s OTLP ports for Claude Code and the dashboard on the API port', () => {
    const collectorPorts = arr(obj(services['otel-collector'])['ports']).map(String);
    expect(collectorPorts).toEqual(expect.arrayContaining(['4317:4317', '4318:4318']));
    expect(arr(obj(services['hookwatch'])['ports']).map(String)).toContain(`127.0.0.1:${HTTP_PORT}:${HTTP_PORT}`);
    const collectorConfig = mounts('otel-collector').find((m) => m.target.endsWith('config.yaml'))?.source;
    expect(collectorConfig).toBe('./deploy/otel-collector/fan-out.yaml');
  });
});

// ---------------------------------------------------------------------------------------------------------

describe('OpenTelemetry Collector configs', () => {
  for (const file of ['deploy/otel-collector/fan-out.yaml', 'deploy/otel-collector/inline.yaml']) {
    it(`${file}: every pipeline component is defined and used; receivers take OTLP on 0.0.0.0:4317/4318`, () => {
      const cfg = obj(parseYaml(read(file)));
      const pipelines = obj(obj(cfg['service'])['pipelines']);
      const used = { receivers: new Set<string>(), processors: new Set<string>(), exporters: new Set<string>() };
      for (const [name, p] of Object.entries(pipelines)) {
        expect(name).toMatch(/^(logs|metrics|traces)(\/[\w-]+)?$/);
        for (const kind of ['receivers', 'processors', 'exporters'] as const) {
          for (const c of arr(obj(p)[kind]).map(String)) {
            expect(Object.keys(obj(cfg[kind])), `${name} uses undefined ${kind.slice(0, -1)} ${c}`).toContain(c);
            used[kind].add(c);
          }
        }
      }
      for (const kind of ['receivers', 'processors', 'exporters'] as const) expect([...used[kind]].sort(), `unused ${kind}`).toEqual(Object.keys(obj(cfg[kind])).sort());
      const protocols = obj(obj(obj(cfg['receivers'])['otlp'])['protocols']);
      expect(obj(protocols['grpc'])['endpoint']).toBe('0.0.0.0:4317');
      expect(obj(protocols['http'])['endpoint']).toBe('0.0.0.0:4318');
      for (const signal of ['logs', 'metrics', 'traces']) expect(Object.keys(pipelines).some((n) => n.split('/')[0] === signal), `${signal} reaches the backend`).toBe(true);
    });
  }

  it('fan-out sends only hook events to hookwatch\'s OTLP/HTTP port, everything to the backend', () => {
    const cfg = obj(parseYaml(read('deploy/otel-collector/fan-out.yaml')));
    const exporter = obj(obj(cfg['exporters'])['otlphttp/hookwatch']);
    expect(new URL(String(exporter['endpoint'])).port).toBe(String(OTLP_HTTP_PORT));
    const filter = JSON.stringify(obj(cfg['processors'])['filter/hook-events']);
    expect(filter).toContain('hook_execution_complete');
    expect(filter).toContain('hook_execution_start');
    // What hookwatch's own tools send through the same Collector (guard --report, scan --send).
    expect(filter).toContain('hookwatch.guard_trim');
    expect(filter).toContain('hookwatch.transcript_finding');
    const pipelines = obj(obj(cfg['service'])['pipelines']);
    const toHookwatch = Object.values(pipelines).map(obj).filter((p) => arr(p['exporters']).includes('otlphttp/hookwatch'));
    expect(toHookwatch).toHaveLength(1);
    expect(arr(toHookwatch[0]?.['processors'])).toContain('filter/hook-events');
  });

  it('fan-out retries hookwatch with no time limit from a bounded queue, and docs/deploy.md states the bound', () => {
    const cfg = obj(parseYaml(read('deploy/otel-collector/fan-out.yaml')));
    const exporter = obj(obj(cfg['exporters'])['otlphttp/hookwatch']);
    // The exporter's default gives up on a batch after 300 s: an outage of hookwatch longer than that lost it.
    const retry = obj(exporter['retry_on_failure']);
    expect(retry['enabled']).toBe(true);
    expect(String(retry['max_elapsed_time'])).toMatch(/^0s?$/);
    // Bounded, and never blocking: a full queue must not hold up the pipelines to the backend.
    const queue = obj(exporter['sending_queue']);
    expect(queue['enabled']).toBe(true);
    expect(queue['blocking'] ?? false).toBe(false);
    expect(queue['block_on_overflow'] ?? false).toBe(false);
    const batches = Number(queue['queue_size']);
    expect(batches).toBeGreaterThan(0);
    // Each queued batch holds a bounded number of events: the batch processor of hookwatch's pipeline caps it.
    const pipeline = Object.values(obj(obj(cfg['service'])['pipelines'])).map(obj).find((p) => arr(p['exporters']).includes('otlphttp/hookwatch'));
    const batchers = arr(pipeline?.['processors']).map(String).filter((n) => n.split('/')[0] === 'batch');
    expect(batchers).toHaveLength(1);
    const batch = obj(obj(cfg['processors'])[batchers[0] as string]);
    const perBatch = Number(batch['send_batch_max_size']);
    expect(perBatch).toBeGreaterThan(0);
    expect(Number(batch['send_batch_size'])).toBeLessThanOrEqual(perBatch);
    // What is lost when is documented with the figures the config sets.
    const docs = read('docs/deploy.md').replace(/\s+/g, ' ');
    const n = (x: number): string => x.toLocaleString('en-US');
    expect(docs).toContain(`at most ${n(batches)} batches of at most ${n(perBatch)} hook events (${n(batches * perBatch)} events`);
    expect(docs).toContain('max_elapsed_time: 0s');
    expect(read('deploy/otel-collector/fan-out.yaml')).toContain(`${n(batches)} batches of at most ${n(perBatch)} hook events (${n(batches * perBatch)} events`);
  });
});

// ---------------------------------------------------------------------------------------------------------

describe('Kubernetes manifests', () => {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const f of readdirSync(join(ROOT, dir))) {
      const p = `${dir}/${f}`;
      if (statSync(join(ROOT, p)).isDirectory()) walk(p);
      else if (/\.ya?ml$/.test(f)) files.push(p);
    }
  };
  walk('deploy/kubernetes');
  /** Files a configMapGenerator turns into ConfigMaps: hookwatch config files, not manifests. */
  const generated = files.filter((f) => posix.basename(f) === 'kustomization.yaml').flatMap((f) => arr(obj(parseYaml(read(f)))['configMapGenerator']).flatMap((g) => arr(obj(g)['files']).map((x) => posix.join(posix.dirname(f), String(x)))));
  const docs = files.filter((f) => !generated.includes(f)).flatMap((f) => parseAllDocuments(read(f)).map((d) => {
    expect(d.errors, f).toEqual([]);
    return { file: f, doc: obj(d.toJS()) };
  }));
  const dockerUser = Number((dockerfile().filter((i) => i.op === 'USER').pop()?.args ?? '').split(':')[0]);
  const containersOf = (doc: Doc): Doc[] => arr(obj(obj(obj(doc['spec'])['template'])['spec'])['containers']).map(obj);
  /** Runs `edit` on a scratch copy of deploy/kubernetes, which it may change. */
  const onCopy = (edit: (dir: string) => void): void => {
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-kustomize-'));
    try {
      cpSync(join(ROOT, 'deploy/kubernetes'), dir, { recursive: true });
      edit(dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  /** Bytes of a Kubernetes quantity in Mi or Gi, the units the manifests use. */
  const quantity = (q: unknown): number => {
    const m = /^(\d+)(Mi|Gi)$/.exec(String(q));
    expect(m, `quantity ${String(q)}`).not.toBeNull();
    return Number(m?.[1]) * (m?.[2] === 'Gi' ? 1024 ** 3 : 1024 ** 2);
  };
  /** The pod spec and its one container of an overlay's rendered Deployment. */
  const renderedPod = (overlay: string): { pod: Doc; c: Doc; env: Record<string, string> } => {
    const dep = kustomize(`deploy/kubernetes/${overlay}`).find((d) => d['kind'] === 'Deployment') as Doc;
    const c = containersOf(dep)[0] as Doc;
    const env = Object.fromEntries(arr(c['env']).map(obj).filter((e) => typeof e['value'] === 'string').map((e) => [String(e['name']), String(e['value'])]));
    return { pod: obj(obj(obj(dep['spec'])['template'])['spec']), c, env };
  };
  /** The "Kubernetes" section of docs/deploy.md. */
  const kubernetesDocs = (): string => read('docs/deploy.md').split('\n## Kubernetes\n')[1]?.split('\n## ')[0] ?? '';
  /** What `kubectl apply -k <dir>` would apply. */
  const kustomize = (dir: string): Doc[] => {
    const r = spawnSync('kubectl', ['kustomize', dir], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
    expect(r.stderr, dir).toBe('');
    expect(r.status, dir).toBe(0);
    return parseAllDocuments(r.stdout).map((d) => obj(d.toJS()));
  };

  it('parses, and every document has apiVersion, kind and a name', () => {
    expect(files.length).toBeGreaterThanOrEqual(8);
    for (const { file, doc } of docs) {
      expect(doc['apiVersion'], file).toBeTruthy();
      expect(doc['kind'], file).toBeTruthy();
      if (doc['kind'] !== 'Kustomization' && doc['kind'] !== 'Component') expect(obj(doc['metadata'])['name'], file).toBeTruthy();
    }
  });

  it('sets only HOOKWATCH_* variables the app knows, on the default ports, with data on the /data mount', () => {
    const deployments = docs.filter((d) => d.doc['kind'] === 'Deployment');
    expect(deployments.length).toBeGreaterThanOrEqual(2); // the base and the overlays' patches
    for (const { file, doc } of deployments) {
      for (const c of containersOf(doc)) {
        const env = Object.fromEntries(arr(c['env']).map(obj).map((e) => [String(e['name']), e['value'] ?? '(from secret)']));
        expect(envProblems(file, env)).toEqual([]);
        for (const name of DATA_FILE_ENVS) {
          const v = env[name];
          if (typeof v === 'string' && v.startsWith('/')) expect(posix.dirname(v), `${file} ${name}`).toBe('/data');
        }
      }
    }
  });

  it('base Deployment: named ports match the schema, probes hit /healthz and /readyz, non-root as in the image, grace period above the shutdown bound', () => {
    const { doc } = docs.find((d) => d.file === 'deploy/kubernetes/base/deployment.yaml') as { doc: Doc };
    const pod = obj(obj(obj(doc['spec'])['template'])['spec']);
    const c = containersOf(doc)[0] as Doc;
    const ports = Object.fromEntries(arr(c['ports']).map(obj).map((p) => [String(p['name']), Number(p['containerPort'])]));
    const env = Object.fromEntries(arr(c['env']).map(obj).map((e) => [String(e['name']), e['value']]));
    expect(ports['http']).toBe(HTTP_PORT);
    expect(ports['otlp-http']).toBe(OTLP_HTTP_PORT);
    for (const [name, port] of DEFAULT_PORTS) expect(Object.values(ports), name).toContain(port);
    // /readyz needs the credentials, which only the pod's environment holds (from the Secret): an exec probe of the
    // image's health check script, which the image ships at that path (Dockerfile: WORKDIR /app).
    expect(arr(obj(obj(c['readinessProbe'])['exec'])['command'])).toEqual(['node', '/app/deploy/docker/healthcheck.mjs', '/readyz']);
    expect(dockerfile().some((i) => i.op === 'COPY' && i.args.endsWith(' ./deploy/docker/healthcheck.mjs'))).toBe(true);
    expect(obj(obj(c['livenessProbe'])['httpGet'])).toMatchObject({ path: '/healthz', port: 'http' });
    expect(obj(pod['securityContext'])).toMatchObject({ runAsNonRoot: true, runAsUser: dockerUser });
    // The Service named hookwatch would otherwise inject HOOKWATCH_PORT, HOOKWATCH_SERVICE_HOST, ... into the pod.
    expect(pod['enableServiceLinks']).toBe(false);
    expect(obj(c['securityContext'])['readOnlyRootFilesystem']).toBe(true);
    const mountsByPath = Object.fromEntries(arr(c['volumeMounts']).map(obj).map((m) => [String(m['mountPath']), String(m['name'])]));
    expect(mountsByPath['/data']).toBe('data');
    expect(posix.dirname(String(env['HOOKWATCH_DB']))).toBe('/data');
    expect(mountsByPath[posix.dirname(String(env['HOOKWATCH_CONFIG']))]).toBe('config');
    const bound = env['HOOKWATCH_SHUTDOWN_TIMEOUT'] === undefined ? SHUTDOWN_MS : (loadConfig({ env: { HOOKWATCH_SHUTDOWN_TIMEOUT: String(env['HOOKWATCH_SHUTDOWN_TIMEOUT']) } }).values.get('shutdown.timeout') as number);
    const preStop = arr(obj(obj(obj(c['lifecycle'])['preStop'])['exec'])['command']).map(String);
    const pauseMs = preStop[0] === 'sleep' ? Number(preStop[1]) * 1000 : 0;
    expect(Number(pod['terminationGracePeriodSeconds']) * 1000).toBeGreaterThan(pauseMs + bound);
    expect(obj(obj(obj(doc['spec'])['template'])['metadata'])['annotations']).toMatchObject({ 'prometheus.io/port': String(HTTP_PORT), 'prometheus.io/path': '/metrics' });
  });

  it('base Deployment: private by default, the HTTP port under a token and the OTLP ports under the ingest token, both required from the Secret, and Prometheus sends the token', () => {
    // Every pod in the cluster reaches the ports: without credentials any of them could read hooks, create
    // silences, reload, replay dead letters or send telemetry.
    const { doc } = docs.find((d) => d.file === 'deploy/kubernetes/base/deployment.yaml') as { doc: Doc };
    const env = Object.fromEntries(arr((containersOf(doc)[0] as Doc)['env']).map(obj).map((e) => [String(e['name']), e]));
    expect(env['HOOKWATCH_HTTP_AUTH_MODE']?.['value']).toBe('bearer');
    for (const [name, key] of [['HOOKWATCH_HTTP_AUTH_TOKEN', 'http-auth-token'], ['HOOKWATCH_INGEST_TOKEN', 'ingest-token']]) {
      expect(obj(obj(env[name as string]?.['valueFrom'])['secretKeyRef']), name).toEqual({ name: 'hookwatch', key });
    }
    // The example Secret commits no token: set, or hookwatch refuses to start (http.auth.token is required).
    const secret = obj((docs.find((d) => d.doc['kind'] === 'Secret')?.doc as Doc)['stringData']);
    expect(secret['http-auth-token']).toBe('');
    expect(secret['ingest-token']).toBe('');
    expect(() => startsWith({ HOOKWATCH_HTTP_AUTH_MODE: 'bearer', HOOKWATCH_HTTP_AUTH_TOKEN: String(secret['http-auth-token']) })).toThrow('http.auth.token is required when http.auth.mode is bearer');
    const job = obj(arr(obj(parseYaml(read('deploy/prometheus/kubernetes-scrape.yml')))['scrape_configs'])[0]);
    expect(obj(job['authorization'])['credentials_file']).toMatch(/^\/etc\/prometheus\//);
    const monitor = obj(arr(obj((docs.find((d) => d.file === 'deploy/kubernetes/servicemonitor.example.yaml') as { doc: Doc }).doc['spec'])['endpoints'])[0]);
    expect(obj(obj(monitor['authorization'])['credentials'])).toEqual({ name: 'hookwatch', key: 'http-auth-token' });
  });

  it('base Deployment: a start that migrates a large database is neither restarted by the liveness probe (a startupProbe allows minutes) nor reported as a failed rollout, and a busy store does not fail the probes', () => {
    const { doc } = docs.find((d) => d.file === 'deploy/kubernetes/base/deployment.yaml') as { doc: Doc };
    const c = containersOf(doc)[0] as Doc;
    // On PostgreSQL hookwatch answers /healthz while its store opens (a migration, a database not up yet); a SQLite
    // migration holds the event loop, and /healthz answers nothing until it is done, minutes for a large database:
    // the startup probe keeps the liveness probe from killing that start, whose restart would begin it again.
    const budgetSeconds = (p: Doc): number => Number(p['initialDelaySeconds'] ?? 0) + Number(p['periodSeconds'] ?? 10) * Number(p['failureThreshold'] ?? 3);
    const startup = obj(c['startupProbe']);
    expect(obj(startup['httpGet']), 'a startupProbe on /healthz').toMatchObject({ path: '/healthz', port: 'http' });
    expect(budgetSeconds(startup), 'seconds a start may take before the kubelet restarts it').toBeGreaterThanOrEqual(300);
    // A rollout is reported failed past progressDeadlineSeconds (600 unless set): a start the startup probe still
    // allows, plus the readiness check after it, must fit, or `kubectl rollout status` fails mid-migration.
    const readiness = obj(c['readinessProbe']);
    expect(Number(obj(doc['spec'])['progressDeadlineSeconds'] ?? 600), 'progressDeadlineSeconds').toBeGreaterThan(budgetSeconds(startup) + budgetSeconds(readiness));
    // /readyz may take its 2 s bound, and an event loop busy with a large batch delays every answer; the kubelet's
    // default timeout is 1s.
    for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) expect(Number(obj(c[probe])['timeoutSeconds'] ?? 1), `${probe}.timeoutSeconds`).toBeGreaterThanOrEqual(5);
    // A replica cut off from PostgreSQL answers /readyz 503 within 2 s; the Service stops sending it batches it
    // could only refuse after periodSeconds x failureThreshold, which stays within 10 s (the kubelet's defaults
    // give 30 s), while one failed probe alone keeps it in.
    expect(budgetSeconds(readiness), 'seconds before a replica answering 503 on /readyz leaves the Service').toBeLessThanOrEqual(10);
    expect(Number(readiness['failureThreshold'] ?? 3), 'readinessProbe.failureThreshold').toBeGreaterThanOrEqual(2);
  });

  it('the TLS patch of docs/deploy.md moves every httpGet probe of the base Deployment to https, the startup probe included', () => {
    const { doc } = docs.find((d) => d.file === 'deploy/kubernetes/base/deployment.yaml') as { doc: Doc };
    const base = containersOf(doc)[0] as Doc;
    const probes = Object.keys(base).filter((k) => k.endsWith('Probe') && obj(base[k])['httpGet'] !== undefined);
    // The readiness probe runs the health check script, which asks over https by itself when the port speaks TLS.
    expect(probes).toEqual(expect.arrayContaining(['startupProbe', 'livenessProbe']));
    const block = [...read('docs/deploy.md').matchAll(/```yaml\n([\s\S]*?)\n```/g)].map((m) => m[1] as string).find((b) => b.includes('HOOKWATCH_HTTP_TLS_CERT_FILE'));
    expect(block, 'the Deployment patch in docs/deploy.md, "TLS"').toBeDefined();
    const patched = containersOf(obj(parseYaml(block ?? ''))).find((c) => c['name'] === base['name']) ?? {};
    // A strategic merge patch leaves a probe it does not name as it was: over plain HTTP, which a TLS port hangs up
    // on, so the kubelet would restart the pod (a startup probe that never passes does so after 10 minutes).
    for (const probe of probes) expect(obj(obj(patched[probe])['httpGet'])['scheme'], probe).toBe('HTTPS');
  });

  it('Service targets the container\'s named ports; secrets referenced exist in the example Secret; the ConfigMap loads strictly', () => {
    const { doc: svc } = docs.find((d) => d.doc['kind'] === 'Service') as { doc: Doc };
    const { doc: dep } = docs.find((d) => d.file === 'deploy/kubernetes/base/deployment.yaml') as { doc: Doc };
    const names = arr((containersOf(dep)[0] as Doc)['ports']).map((p) => obj(p)['name']);
    for (const p of arr(obj(svc['spec'])['ports']).map(obj)) expect(names).toContain(p['targetPort']);
    const secret = docs.find((d) => d.doc['kind'] === 'Secret')?.doc as Doc;
    const keys = Object.keys(obj(secret['stringData']));
    const refs = docs.filter((d) => d.doc['kind'] === 'Deployment').flatMap((d) => containersOf(d.doc)).flatMap((c) => arr(c['env']).map(obj)).map((e) => obj(obj(e['valueFrom'])['secretKeyRef'])).filter((r) => r['key']);
    expect(refs.length).toBeGreaterThanOrEqual(2);
    for (const r of refs) {
      expect(r['name']).toBe(obj(secret['metadata'])['name']);
      expect(keys).toContain(r['key']);
    }
    expect(generated).toEqual(['deploy/kubernetes/base/hookwatch.yaml']);
    const text = read(generated[0] as string);
    toConfig(loadConfig({ flags: { config: 'hookwatch.yaml' }, env: {}, readFile: () => text }));
    // The base Deployment's literal variables, those from the Secret (set, as the example asks) and the ConfigMap, as the pod starts.
    startsWith(Object.fromEntries(arr((containersOf(dep)[0] as Doc)['env']).map(obj).map((e) => [String(e['name']), e['value'] ?? (e['valueFrom'] ? 'set-in-the-secret-0123456789' : undefined)])), text);
    // The commented alerting block, uncommented, loads with the variables the Deployment sets from the Secret:
    // the receivers' secrets reach the file through ${env:...}, never through the ConfigMap.
    const block = text.split('\n').filter((l) => /^# ( {2}|alerting:)/.test(l)).map((l) => l.slice(2)).join('\n');
    expect(block).toContain('${env:ALERT_WEBHOOK_URL}');
    const fromSecret = Object.fromEntries(arr((containersOf(dep)[0] as Doc)['env']).map(obj).flatMap((e) => {
      const ref = obj(obj(e['valueFrom'])['secretKeyRef']);
      return ref['key'] ? [[String(e['name']), String(obj(secret['stringData'])[String(ref['key'])])]] : [];
    }));
    const receivers = toConfig(loadConfig({ flags: { config: 'hookwatch.yaml' }, env: fromSecret, readFile: () => `${text}\n${block}\n` })).alerting.receivers;
    expect(receivers.map((r) => r.url)).toEqual([obj(secret['stringData'])['alert-webhook-url']]);
    // The example's kubectl command, pasted, is one shell command that creates every key the Secret shows.
    const example = read('deploy/kubernetes/secret.example.yaml').split('\n');
    const from = example.findIndex((l) => l.startsWith('#   kubectl'));
    const command: string[] = [];
    for (let i = from; i >= 0 && i < example.length && example[i]?.startsWith('#  '); i++) {
      command.push((example[i] ?? '').slice(1));
      if (!(example[i] ?? '').endsWith('\\')) break;
    }
    const sh = spawnSync('bash', ['-n'], { input: command.join('\n'), encoding: 'utf8' });
    expect(sh.status, sh.stderr).toBe(0);
    expect([...command.join('\n').matchAll(/--from-literal=([a-z-]+)=/g)].map((m) => m[1]).sort()).toEqual(keys.sort());
    expect(text).not.toMatch(/hooks\.example\.com\/replace-me|whsec_/);
  });

  it.skipIf(!hasKubectl)('each overlay builds with kubectl kustomize, labels every resource alike, and the rendered Deployment still sets only known variables (skipped only outside CI without kubectl)', () => {
    for (const overlay of ['sqlite', 'postgres']) {
      const rendered = kustomize(`deploy/kubernetes/${overlay}`);
      const dep = rendered.find((d) => d['kind'] === 'Deployment') as Doc;
      // Every resource an overlay renders, its own (PVC, PDB) as well as the base's, and the pods carry the
      // Kubernetes recommended labels; the version label is the release the image runs.
      const image = String((containersOf(dep)[0] as Doc)['image']);
      const version = image.split(':').pop();
      expect(version).toBe((JSON.parse(read('package.json')) as { version: string }).version);
      const recommended = {
        'app.kubernetes.io/name': 'hookwatch', 'app.kubernetes.io/instance': 'hookwatch', 'app.kubernetes.io/version': version,
        'app.kubernetes.io/component': 'server', 'app.kubernetes.io/part-of': 'hookwatch', 'app.kubernetes.io/managed-by': 'kustomize',
      };
      for (const d of rendered) expect(obj(obj(d['metadata'])['labels']), `${overlay}: ${String(d['kind'])}`).toEqual(recommended);
      expect(obj(obj(obj(dep['spec'])['template'])['metadata'])['labels'], `${overlay}: pod template`).toEqual(recommended);
      // Selectors stay on the name alone: a Deployment's selector cannot change once it exists.
      expect(obj(obj(dep['spec'])['selector'])['matchLabels']).toEqual({ 'app.kubernetes.io/name': 'hookwatch' });
      const env = arr((containersOf(dep)[0] as Doc)['env']).map(obj);
      expect(envProblems(overlay, Object.fromEntries(env.map((e) => [String(e['name']), e['value'] ?? '(secret)'])))).toEqual([]);
      const db = env.find((e) => e['name'] === 'HOOKWATCH_DB') as Doc;
      const volumes = arr(obj(obj(obj(dep['spec'])['template'])['spec'])['volumes']).map(obj);
      const data = volumes.find((v) => v['name'] === 'data') as Doc;
      if (overlay === 'sqlite') {
        expect(db['value']).toBe('/data/hookwatch.db');
        expect(obj(data['persistentVolumeClaim'])['claimName']).toBe('hookwatch-data');
        expect(data['emptyDir']).toBeUndefined();
        expect(obj(obj(dep['spec'])['strategy'])['type']).toBe('Recreate');
        expect(rendered.some((d) => d['kind'] === 'PersistentVolumeClaim')).toBe(true);
        // One replica: a budget keeping it would block every node drain, and one letting it go says nothing.
        expect(rendered.some((d) => d['kind'] === 'PodDisruptionBudget')).toBe(false);
      } else {
        expect(db['value']).toBeUndefined();
        expect(obj(obj(db['valueFrom'])['secretKeyRef'])['key']).toBe('db-url');
        expect(rendered.some((d) => d['kind'] === 'PersistentVolumeClaim')).toBe(false);
        // Several replicas: a drain evicts one at a time, a rollout never goes below the replica count, and the
        // scheduler spreads them over nodes.
        const spec = obj(dep['spec']);
        const podLabels = obj(obj(obj(spec['template'])['metadata'])['labels']);
        const pdb = rendered.find((d) => d['kind'] === 'PodDisruptionBudget') as Doc;
        const selects = obj(obj(obj(pdb['spec'])['selector'])['matchLabels']);
        for (const [k, v] of Object.entries(selects)) expect(podLabels[k], k).toBe(v);
        // One replica at a time, at the shipped replica count and at any the Deployment is scaled to: the
        // disruptions a PDB allows are maxUnavailable, or the replicas above minAvailable.
        const budget = obj(pdb['spec']);
        const allowed = (replicas: number): number => (budget['maxUnavailable'] !== undefined ? Number(budget['maxUnavailable']) : replicas - Number(budget['minAvailable']));
        for (const replicas of [Number(spec['replicas']), 3, 5]) expect(allowed(replicas), `evictions allowed at once with ${replicas} replicas`).toBe(1);
        // A replica that is not ready (the database down: every replica answers /readyz 503) takes no requests, and
        // evicting it loses nothing; with the default policy it may be evicted only while the budget holds, so a
        // database outage would block every node drain until the database is back.
        expect(budget['unhealthyPodEvictionPolicy'], 'unhealthyPodEvictionPolicy').toBe('AlwaysAllow');
        expect(obj(obj(spec['strategy'])['rollingUpdate'])['maxUnavailable']).toBe(0);
        const spread = arr(obj(obj(spec['template'])['spec'])['topologySpreadConstraints']).map(obj);
        expect(spread.map((c) => c['topologyKey'])).toContain('kubernetes.io/hostname');
      }
      expect(obj(obj(dep['spec'])['template'])['spec']).toMatchObject({ automountServiceAccountToken: false });
    }
  });
  it.skipIf(!hasKubectl)('postgres: every topology spread constraint counts the pods of one rollout only (matchLabelKeys: pod-template-hash), so a rolling update does not skew the spread', () => {
    // Counted with the old ReplicaSet's pods, the new replicas go where the old ones were not, and once the old
    // ones are gone they can all be on one node. pod-template-hash is the label the Deployment gives each
    // ReplicaSet's pods; the scheduler adds it to labelSelector (beta and on by default since Kubernetes 1.27).
    const dep = kustomize('deploy/kubernetes/postgres').find((d) => d['kind'] === 'Deployment') as Doc;
    const spread = arr(obj(obj(obj(dep['spec'])['template'])['spec'])['topologySpreadConstraints']).map(obj);
    expect(spread.length).toBeGreaterThan(0);
    for (const c of spread) {
      expect(arr(c['matchLabelKeys']), String(c['topologyKey'])).toEqual(['pod-template-hash']);
      expect(Object.keys(obj(obj(c['labelSelector'])['matchLabels'])), String(c['topologyKey'])).not.toContain('pod-template-hash');
    }
    expect(kubernetesDocs()).toContain('matchLabelKeys: [pod-template-hash]');
  });

  it('postgres: each field of a recent Kubernetes release says, in its manifest and in docs/deploy.md, the release that knows it, the one that turns it on, and what older API servers do with it', () => {
    // An API server that knows a field behind a feature gate that is off drops it; one that does not know it at all
    // makes `kubectl apply` fail (strict field validation, kubectl's default): "an older cluster drops it" is wrong.
    const fields = [
      { file: 'deploy/kubernetes/postgres/deployment-patch.yaml', field: 'matchLabelKeys', known: '1.25', on: '1.27', gate: 'MatchLabelKeysInPodTopologySpread' },
      { file: 'deploy/kubernetes/postgres/pdb.yaml', field: 'unhealthyPodEvictionPolicy', known: '1.26', on: '1.27', gate: 'PDBUnhealthyPodEvictionPolicy' },
    ];
    const section = kubernetesDocs().replace(/\s+/g, ' ');
    for (const { file, field, known, on, gate } of fields) {
      const text = read(file);
      expect(text, file).toMatch(new RegExp(`^\\s*${field}:`, 'm'));
      const comments = text.split('\n').filter((l) => /^\s*#/.test(l)).map((l) => l.replace(/^\s*#\s?/, '')).join(' ');
      for (const words of [`Kubernetes ${on} and later`, gate, `older than ${known}`, 'refuses']) expect(comments, `${file}: ${field}`).toContain(words);
      for (const words of [`from Kubernetes ${on}`, `\`${gate}\``, `before ${known} for \`${field}\``, 'refuses']) expect(section, field).toContain(words);
    }
  });

  it.skipIf(!hasKubectl)('each overlay bounds its disk: every emptyDir has a sizeLimit, the container an ephemeral-storage request and a limit above them and its log, the queue\'s volume holds a full forward queue, and SQLite\'s temporary files go to the store\'s volume', () => {
    // The kubelet keeps up to 5 files of 10 MiB of a container's log by default, counted against its limit.
    const LOGS = 64 * 1024 ** 2;
    for (const overlay of ['sqlite', 'postgres']) {
      const { pod, c, env } = renderedPod(overlay);
      const volumes = arr(pod['volumes']).map(obj);
      const emptyDirs = volumes.filter((v) => v['emptyDir'] !== undefined);
      expect(emptyDirs.length, overlay).toBeGreaterThan(0);
      // An emptyDir without sizeLimit can fill the node's disk; past its limit the kubelet evicts the pod.
      for (const v of emptyDirs) expect(obj(v['emptyDir'])['sizeLimit'], `${overlay}: emptyDir ${String(v['name'])}`).toBeDefined();
      const sized = emptyDirs.reduce((sum, v) => sum + quantity(obj(v['emptyDir'])['sizeLimit']), 0);
      const resources = obj(c['resources']);
      const request = quantity(obj(resources['requests'])['ephemeral-storage']);
      const limit = quantity(obj(resources['limits'])['ephemeral-storage']);
      expect(limit, overlay).toBeGreaterThanOrEqual(request);
      // The pod's own limit is what its containers' add up to: below its volumes' bounds, a volume filling up
      // within its sizeLimit still gets the pod evicted.
      expect(limit, `${overlay}: ephemeral-storage limit against the emptyDirs' sizeLimits and the log`).toBeGreaterThanOrEqual(sized + LOGS);
      const mounts = new Map(arr(c['volumeMounts']).map(obj).map((m) => [String(m['mountPath']), volumes.find((v) => v['name'] === m['name']) as Doc]));
      const config = loadConfig({ env, readFile: () => read('deploy/kubernetes/base/hookwatch.yaml') }).values;
      // The forward queue (inline mode) on an emptyDir: a full queue (forward.queue.maxBytes of bodies) and the
      // dead letters beside it (forward.deadLetters.maxBytes) fit, with room for SQLite's pages and write-ahead log
      // (1.12 times the bodies, measured), so a long outage of the destination gets 503s from the queue's bound
      // rather than an eviction that loses what it held.
      const queueVolume = mounts.get(posix.dirname(String(env['HOOKWATCH_FORWARD_QUEUE_PATH'])));
      expect(queueVolume, `${overlay}: the forward queue's volume`).toBeDefined();
      if (obj(queueVolume)['emptyDir'] !== undefined) {
        const queued = (config.get('forward.queue.maxBytes') as number) + (config.get('forward.deadLetters.maxBytes') as number);
        expect(quantity(obj(obj(queueVolume)['emptyDir'])['sizeLimit']), `${overlay}: the forward queue's emptyDir`).toBeGreaterThanOrEqual(1.5 * queued);
      }
      // SQLite writes the sorts of an index build (a schema migration of a large store) and of large queries to
      // temporary files, in /tmp unless SQLITE_TMPDIR says otherwise; they can take as much as the index. On the
      // store's volume they are bounded by what it holds, not by /tmp's sizeLimit.
      expect(env['SQLITE_TMPDIR'], overlay).toBeDefined();
      expect(mounts.get(String(env['SQLITE_TMPDIR'])), `${overlay}: SQLITE_TMPDIR is the store's volume`).toBe(mounts.get(posix.dirname(String(env['HOOKWATCH_FORWARD_QUEUE_PATH']))));
      if (overlay === 'sqlite') expect(mounts.get(String(env['SQLITE_TMPDIR'])), overlay).toBe(mounts.get(posix.dirname(String(env['HOOKWATCH_DB']))));
    }
    const section = kubernetesDocs();
    expect(section).toContain('ephemeral-storage');
    expect(section).toContain('SQLITE_TMPDIR');
  });

  it.skipIf(!hasKubectl)('what a hookwatch start and stop writes to /tmp (the compiled sources Node keeps) fits well within the sizeLimit of the pods\' /tmp', async () => {
    const scratch = tempDir('hookwatch-tmp-');
    let child: ChildProcess | undefined;
    let exited: Promise<number | null> = Promise.resolve(null);
    try {
      const tmp = join(scratch.dir, 'tmp');
      const data = join(scratch.dir, 'data');
      mkdirSync(tmp);
      mkdirSync(data);
      // As the image starts it: node on main.ts, serve, with TMPDIR standing for the pod's /tmp.
      const started = spawn(process.execPath, [join(ROOT, 'collector/src/main.ts'), 'serve'], {
        env: {
          PATH: process.env['PATH'] ?? '', TMPDIR: tmp, SQLITE_TMPDIR: data, HOOKWATCH_DB: join(data, 'hookwatch.db'), HOOKWATCH_FORWARD_QUEUE_PATH: join(data, 'forward-queue.db'),
          HOOKWATCH_OTLP_HTTP_ADDR: '127.0.0.1:0', HOOKWATCH_OTLP_GRPC_ADDR: '127.0.0.1:0', HOOKWATCH_HTTP_ADDR: '127.0.0.1:0',
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      child = started;
      exited = new Promise<number | null>((resolve) => started.on('exit', resolve));
      let stderr = '';
      let timer: NodeJS.Timeout | undefined;
      const httpUrl = await new Promise<string>((resolve, reject) => {
        timer = setTimeout(() => reject(new Error(`hookwatch did not log its start within ${START_WAIT_MS} ms: ${stderr}`)), START_WAIT_MS);
        started.stderr.on('data', (chunk: Buffer) => {
          stderr += chunk.toString();
          const url = /"msg":"hookwatch started".*?"http":"(http:\/\/[^"]+)"/.exec(stderr)?.[1];
          if (url) resolve(url);
        });
        void exited.then(() => reject(new Error(`hookwatch exited before it started: ${stderr}`)));
      }).finally(() => clearTimeout(timer));
      // The dashboard and /metrics load what they import on first use.
      for (const path of ['/', '/metrics', '/readyz']) expect((await fetch(`${httpUrl}${path}`)).status, path).toBe(200);
      started.kill('SIGTERM');
      expect(await exited).toBe(0);
      const du = (dir: string): number => readdirSync(dir, { withFileTypes: true }).reduce((sum, e) => sum + (e.isDirectory() ? du(join(dir, e.name)) : statSync(join(dir, e.name)).size), 0);
      const written = du(tmp);
      expect(written, 'bytes written under TMPDIR').toBeGreaterThan(0);
      for (const overlay of ['sqlite', 'postgres']) {
        const { pod, c } = renderedPod(overlay);
        const mount = arr(c['volumeMounts']).map(obj).find((m) => m['mountPath'] === '/tmp') as Doc;
        const volume = arr(pod['volumes']).map(obj).find((v) => v['name'] === mount['name']) as Doc;
        expect(quantity(obj(volume['emptyDir'])['sizeLimit']), `${overlay}: /tmp's sizeLimit against ${written} bytes written`).toBeGreaterThanOrEqual(4 * written);
      }
    } finally {
      // Whatever failed above, the server is gone before its data directory is removed: SIGTERM, then SIGKILL.
      await stopChild(child, exited);
      scratch.cleanup();
    }
  }, START_WAIT_MS + 60_000);

  it.skipIf(!hasKubectl)('each overlay\'s memory: the request covers the RSS measured under load with headroom, and the main thread\'s heap limit NODE_OPTIONS gives the image\'s Node, with what is held beside it, leaves a tenth of the limit free', () => {
    // The load benchmark's peak RSS (50 clients, docs/benchmarks.md): the scheduler places the pod where that much is free.
    const peakRss = Number(/^\| load: peak RSS \| (\d+) MiB \|/m.exec(read('docs/benchmarks.md'))?.[1]) * 1024 ** 2;
    expect(peakRss).toBeGreaterThan(0);
    const imageOptions = envOf(dockerfile().filter((i) => i.stage === Math.max(...dockerfile().map((x) => x.stage))))['NODE_OPTIONS'] ?? '';
    expect(imageOptions).toContain('--disable-warning=ExperimentalWarning');
    // The heap limits below are those of the Node release the image runs (NODE_IMAGE), which the project's own
    // node_modules/.bin/node is: named here, not whatever `node` is first on PATH or runs the tests.
    const imageNode = /^NODE_IMAGE=node:(\d+\.\d+\.\d+)-slim$/.exec(dockerfile().find((i) => i.op === 'ARG' && i.args.startsWith('NODE_IMAGE='))?.args ?? '')?.[1];
    const node = join(ROOT, 'node_modules/.bin/node');
    expect(spawnSync(node, ['--version'], { encoding: 'utf8', timeout: 30_000 }).stdout.trim(), node).toBe(`v${imageNode ?? '(no NODE_IMAGE)'}`);
    // The heap limit of the main thread and of worker threads started as hookwatch starts its own
    // (worker-thread.ts startWorker): one given no bound (a schema migration's, a backup's check), one with the
    // OTLP/JSON decode thread's and one with a read worker's (argv[2], argv[3]).
    const heapScript = `import { getHeapStatistics } from 'node:v8';
      const { startWorker } = await import(${JSON.stringify(new URL('../collector/src/worker-thread.ts', import.meta.url).href)});
      const module = new URL('data:text/javascript,' + encodeURIComponent("import { parentPort } from 'node:worker_threads'; import { getHeapStatistics } from 'node:v8'; parentPort.postMessage(getHeapStatistics().heap_size_limit);"));
      const limitOf = (resourceLimits) => new Promise((resolve) => {
        const w = startWorker(module, resourceLimits ? { resourceLimits } : {});
        w.once('message', (limit) => { resolve(limit); void w.terminate(); });
      });
      const [worker, json, reader] = [await limitOf(undefined), await limitOf(JSON.parse(process.argv[2])), await limitOf(JSON.parse(process.argv[3]))];
      process.stdout.write(JSON.stringify({ main: getHeapStatistics().heap_size_limit, worker, json, reader }));`;
    // A file, not -e: a worker would inherit --input-type, which Node refuses without the -e string.
    const scriptDir = mkdtempSync(join(tmpdir(), 'hookwatch-heap-limits-'));
    const script = join(scriptDir, 'heap-limits.mjs');
    writeFileSync(script, heapScript);
    const budgets = new Set<string>();
    for (const overlay of ['sqlite', 'postgres']) {
      const { c, env } = renderedPod(overlay);
      const resources = obj(c['resources']);
      const request = quantity(obj(resources['requests'])['memory']);
      const limit = quantity(obj(resources['limits'])['memory']);
      expect(request, `${overlay}: memory request against the measured peak RSS`).toBeGreaterThanOrEqual(1.25 * peakRss);
      // The Deployment's NODE_OPTIONS replaces the image's: it keeps every flag of it.
      const options = env['NODE_OPTIONS'] ?? '';
      for (const flag of imageOptions.split(/\s+/)) expect(options.split(/\s+/), `${overlay}: NODE_OPTIONS`).toContain(flag);
      expect(options, `${overlay}: NODE_OPTIONS`).toMatch(/--max-old-space-size=\d+/);
      const config = loadConfig({ env, readFile: () => read('deploy/kubernetes/base/hookwatch.yaml') }).values;
      const bounds = [jsonThreadLimits(config.get('otlp.maxRequestBytes') as number), heapLimits(config.get('store.readerMaxOldSpace') as number)];
      const r = spawnSync(node, [script, ...bounds.map((b) => JSON.stringify(b))], { env: { PATH: process.env['PATH'] ?? '', NODE_OPTIONS: options }, encoding: 'utf8', timeout: 30_000 });
      expect(r.status, r.stderr).toBe(0);
      const heap = JSON.parse(r.stdout) as { main: number; worker: number; json: number; reader: number };
      // The flag bounds the main thread's heap, and a worker's given no bound of its own as the main thread's.
      expect(heap.worker, `${overlay}: a worker thread's heap limit`).toBe(heap.main);
      // The decode thread and each read worker have theirs, below it: the heaps' bounds, as docs/deploy.md adds them.
      expect(heap.json, `${overlay}: the OTLP/JSON decode thread's heap limit`).toBeLessThan(heap.main);
      expect(heap.reader, `${overlay}: a read worker's heap limit`).toBeLessThan(heap.main);
      const readers = config.get('store.readers') as number;
      const mib = (n: number): number => n / 1024 ** 2;
      budgets.add(`${mib(heap.main)} + ${mib(heap.json)} + ${readers} × ${mib(heap.reader)} = ${mib(heap.main + heap.json + readers * heap.reader)} MiB`);
      // Beside the main thread's heap: the request bodies held (otlp.maxInflightBytes, Buffers outside the heap),
      // the store's page cache (sqlite.cacheBytes), and 128 MiB for the worker threads and the code (the whole of
      // it, caches and bodies included, measured 170 MiB idle and 244 MiB under load). A tenth of the limit stays
      // free for what that leaves out: the budget is not the limit.
      const beside = (config.get('otlp.maxInflightBytes') as number) + (config.get('sqlite.cacheBytes') as number) + 128 * 1024 ** 2;
      expect(heap.main + beside, `${overlay}: heap limit ${heap.main} + ${beside} against 0.9 x the memory limit ${limit}`).toBeLessThanOrEqual(0.9 * limit);
      budgets.add(`${heap.main / 1024 ** 2} MiB of heap|${(heap.main + beside) / 1024 ** 2} MiB, ${(limit - heap.main - beside) / 1024 ** 2} MiB below the limit`);
    }
    rmSync(scriptDir, { recursive: true, force: true });
    const section = kubernetesDocs();
    expect(section).toContain('--max-old-space-size');
    // The figures docs/deploy.md gives are these.
    for (const figure of [...budgets].flatMap((b) => b.split('|'))) expect(section.replace(/\s+/g, ' ')).toContain(figure);
    expect(section).toContain(`${Math.round(peakRss / 1024 ** 2)} MiB`);
  });

  it.skipIf(!hasKubectl)('each overlay\'s pod is restricted (non-root, no privilege escalation, no capabilities, RuntimeDefault seccomp, read-only root with writable /data and /tmp) and has requests and a memory limit above the ingest budget', () => {
    const bytes = quantity;
    for (const overlay of ['sqlite', 'postgres']) {
      const dep = kustomize(`deploy/kubernetes/${overlay}`).find((d) => d['kind'] === 'Deployment') as Doc;
      const pod = obj(obj(obj(dep['spec'])['template'])['spec']);
      expect(obj(pod['securityContext']), overlay).toMatchObject({ runAsNonRoot: true, runAsUser: dockerUser, seccompProfile: { type: 'RuntimeDefault' }, fsGroupChangePolicy: 'OnRootMismatch' });
      const volumes = Object.fromEntries(arr(pod['volumes']).map(obj).map((v) => [String(v['name']), v]));
      for (const c of containersOf(dep)) {
        const where = `${overlay}: container ${String(c['name'])}`;
        expect(obj(c['securityContext']), where).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
        expect(obj(obj(c['securityContext'])['capabilities'])['add'], where).toBeUndefined();
        expect(obj(c['securityContext'])['privileged'] ?? false, where).toBe(false);
        // What a read-only root leaves writable: the store's volume and /tmp, each a volume of its own.
        const mounts = Object.fromEntries(arr(c['volumeMounts']).map(obj).map((m) => [String(m['mountPath']), m]));
        for (const path of ['/data', '/tmp']) {
          expect(mounts[path], `${where}: ${path} is mounted`).toBeDefined();
          expect(obj(mounts[path])['readOnly'] ?? false, `${where}: ${path} is writable`).toBe(false);
          const volume = volumes[String(obj(mounts[path])['name'])];
          expect(volume, `${where}: ${path}'s volume`).toBeDefined();
          expect(obj(volume)['emptyDir'] ?? obj(volume)['persistentVolumeClaim'], `${where}: ${path} is an emptyDir or a claim`).toBeDefined();
        }
        const resources = obj(c['resources']);
        expect(Object.keys(obj(resources['requests'])).sort(), where).toEqual(['cpu', 'ephemeral-storage', 'memory']);
        const limit = bytes(obj(resources['limits'])['memory']);
        expect(limit, where).toBeGreaterThanOrEqual(bytes(obj(resources['requests'])['memory']));
        // Request bodies held at once, and what they decode to, are bounded by otlp.maxInflightBytes; the process
        // needs room beside them, or a burst of uploads is an OOM kill instead of 503s with Retry-After.
        const env = Object.fromEntries(arr(c['env']).map(obj).filter((e) => typeof e['value'] === 'string').map((e) => [String(e['name']), String(e['value'])]));
        const inflight = loadConfig({ env, readFile: () => read('deploy/kubernetes/base/hookwatch.yaml') }).values.get('otlp.maxInflightBytes') as number;
        expect(limit, `${where}: memory limit against otlp.maxInflightBytes`).toBeGreaterThanOrEqual(2 * inflight);
      }
    }
  });

  it.skipIf(!hasKubectl)('each overlay\'s Service names the OTLP/gRPC port as cleartext HTTP/2 in the value Gateway API implementations and meshes read, and no HTTP/1.1 port as HTTP/2', () => {
    // kubernetes.io/h2c is the Kubernetes standard value (KEP-3726) that Gateway API implementations and Istio read
    // as HTTP/2 prior knowledge; `grpc` is a name Istio reads, which some of the others (NGINX Gateway Fabric, the
    // AWS Load Balancer Controller) ignore, and then proxy gRPC over HTTP/1.1.
    const grpcPort = DEFAULT_PORTS.get('HOOKWATCH_OTLP_GRPC_ADDR') as number;
    for (const overlay of ['sqlite', 'postgres']) {
      const rendered = kustomize(`deploy/kubernetes/${overlay}`);
      const dep = rendered.find((d) => d['kind'] === 'Deployment') as Doc;
      const svc = rendered.find((d) => d['kind'] === 'Service') as Doc;
      const containerPorts = new Map(arr((containersOf(dep)[0] as Doc)['ports']).map(obj).map((p) => [String(p['name']), Number(p['containerPort'])]));
      const ports = arr(obj(svc['spec'])['ports']).map(obj);
      const byContainerPort = new Map(ports.map((p) => [containerPorts.get(String(p['targetPort'])), p]));
      expect(obj(byContainerPort.get(grpcPort))['appProtocol'], `${overlay}: the Service port of ${grpcPort}`).toBe('kubernetes.io/h2c');
      for (const port of [OTLP_HTTP_PORT, HTTP_PORT]) expect(obj(byContainerPort.get(port))['appProtocol'] ?? 'http', `${overlay}: the Service port of ${port}`).toBe('http');
    }
    // With otlp.tls the port speaks TLS: the patch docs/deploy.md ("TLS") gives takes the mark off that port alone.
    const patch = [...read('docs/deploy.md').matchAll(/```yaml\n([\s\S]*?)\n *```/g)].map((m) => m[1] as string).find((b) => b.includes('/appProtocol'));
    expect(patch, 'the Service patch in docs/deploy.md, "TLS"').toBeDefined();
    onCopy((dir) => {
      writeFileSync(join(dir, 'kustomization.yaml'), `resources:\n  - sqlite\n${(patch as string).replace(/^ {2}/gm, '')}\n`);
      const svc = kustomize(dir).find((d) => d['kind'] === 'Service') as Doc;
      const ports = arr(obj(svc['spec'])['ports']).map(obj);
      expect(ports.map((p) => [p['port'], p['appProtocol']])).toEqual([[grpcPort, undefined], [OTLP_HTTP_PORT, undefined], [HTTP_PORT, undefined]]);
    });
  });

  it.skipIf(!hasKubectl)('the image docs/deploy.md builds and pushes is the one the overlays run once newName names the registry, and its tag is the release', () => {
    const section = kubernetesDocs();
    const pushed = /^docker push (\S+)$/m.exec(section)?.[1];
    expect(pushed, 'docker push in the Kubernetes section of docs/deploy.md').toBeDefined();
    expect(section).toMatch(new RegExp(`^docker build -t ${(pushed as string).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\.$`, 'm'));
    const [name, tag] = (pushed as string).split(/:(?=[^:/]+$)/) as [string, string];
    expect(tag).toBe((JSON.parse(read('package.json')) as { version: string }).version);
    expect(section).toContain(`set newName in deploy/kubernetes/release/kustomization.yaml\n# to ${name}`);
    onCopy((dir) => {
      const release = join(dir, 'release/kustomization.yaml');
      const text = readFileSync(release, 'utf8');
      expect(text).toMatch(/^ {4}newName: hookwatch$/m);
      writeFileSync(release, text.replace(/^ {4}newName: hookwatch$/m, `    newName: ${name}`));
      for (const overlay of ['sqlite', 'postgres']) {
        const dep = kustomize(join(dir, overlay)).find((d) => d['kind'] === 'Deployment') as Doc;
        expect(containersOf(dep).map((c) => c['image']), overlay).toEqual([pushed]);
      }
    });
  });

  it('names the namespace in every kubectl command the pages show, as docs/deploy.md installs into it', () => {
    // The manifests carry no namespace: docs/deploy.md creates \`hookwatch\` and applies into it. A command
    // without \`-n hookwatch\` acts on the current context's namespace, where no hookwatch runs.
    const pages = ['README.md', 'SECURITY.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
    expect(read('docs/deploy.md')).toContain('kubectl create namespace hookwatch');
    const unnamed = pages.flatMap((f) => read(f).split('\n').flatMap((line, i) =>
      [...line.matchAll(/(?:^|`)(kubectl (?!-n hookwatch )(?!kustomize\b|create namespace )[^`]*)/g)].map((m) => `${f}:${i + 1}: ${m[1]}`)));
    expect(unnamed).toEqual([]);
  });

  it('the install commands of docs/deploy.md create, for each overlay, a Secret with every key its Deployment requires', () => {
    const section = kubernetesDocs();
    const block = /```sh\n([\s\S]*?)\n```/.exec(section)?.[1] ?? '';
    const sh = spawnSync('bash', ['-n'], { input: block, encoding: 'utf8' });
    expect(sh.status, sh.stderr).toBe(0);
    const commands = block.replace(/\\\n\s*/g, ' ').split('\n').filter((l) => l.startsWith('kubectl'));
    const secretKeys = Object.keys(obj((docs.find((d) => d.doc['kind'] === 'Secret')?.doc as Doc)['stringData']));
    const applied: string[] = [];
    let keys: string[] = [];
    for (const command of commands) {
      if (command.includes(' create secret generic hookwatch ')) keys = [...command.matchAll(/--from-literal=([a-z-]+)=/g)].map((m) => m[1] as string);
      const overlay = / apply -k (\S+)$/.exec(command)?.[1];
      if (!overlay) continue;
      applied.push(overlay);
      // The keys the overlay's Deployment reads without `optional: true` (a missing one stops the pod from starting).
      const patch = docs.filter((d) => d.doc['kind'] === 'Deployment' && (d.file.startsWith(`${overlay}/`) || d.file.startsWith('deploy/kubernetes/base/')));
      const required = patch.flatMap((d) => containersOf(d.doc)).flatMap((c) => arr(c['env']).map(obj)).map((e) => obj(obj(e['valueFrom'])['secretKeyRef'])).filter((r) => r['key'] && r['optional'] !== true).map((r) => String(r['key']));
      for (const key of required) expect(keys, `${overlay} reads ${key} from the Secret`).toContain(key);
      for (const key of keys) expect(secretKeys, key).toContain(key);
    }
    expect(applied).toEqual(['deploy/kubernetes/sqlite', 'deploy/kubernetes/postgres']);
  });

  it('the example ServiceMonitor scrapes /metrics on the Service\'s http port, under the job the rules watch', () => {
    const file = 'deploy/kubernetes/servicemonitor.example.yaml';
    const { doc: monitor } = docs.find((d) => d.file === file) as { doc: Doc };
    expect(monitor['kind']).toBe('ServiceMonitor');
    const { doc: svc } = docs.find((d) => d.doc['kind'] === 'Service') as { doc: Doc };
    const spec = obj(monitor['spec']);
    const selects = obj(obj(spec['selector'])['matchLabels']);
    expect(Object.keys(selects).length).toBeGreaterThan(0);
    expect(obj(obj(svc['metadata'])['labels'])).toMatchObject(selects);
    const endpoints = arr(spec['endpoints']).map(obj);
    expect(endpoints).toHaveLength(1);
    const servicePort = arr(obj(svc['spec'])['ports']).map(obj).find((p) => p['name'] === endpoints[0]?.['port']);
    expect(servicePort?.['port'], 'the Service port the ServiceMonitor names').toBe(HTTP_PORT);
    expect(endpoints[0]?.['path']).toBe('/metrics');
    // The operator's job label is the Service's name unless jobLabel says otherwise; HookwatchDown watches it.
    expect(spec['jobLabel']).toBeUndefined();
    expect(read('deploy/prometheus/rules.yml')).toContain(`up{job="${String(obj(svc['metadata'])['name'])}"}`);
    const command = `kubectl -n hookwatch apply -f ${file}`;
    expect(read(file)).toContain(command);
    expect(read('docs/deploy.md')).toContain(command);
  });

  it('the example NetworkPolicy selects the pods and admits every port the Service exposes, by the container\'s port names', () => {
    const file = 'deploy/kubernetes/networkpolicy.example.yaml';
    const { doc: policy } = docs.find((d) => d.file === file) as { doc: Doc };
    expect(policy['kind']).toBe('NetworkPolicy');
    const { doc: dep } = docs.find((d) => d.file === 'deploy/kubernetes/base/deployment.yaml') as { doc: Doc };
    const podLabels = obj(obj(obj(dep['spec'])['template'])['metadata'])['labels'];
    const spec = obj(policy['spec']);
    const selects = obj(obj(spec['podSelector'])['matchLabels']);
    expect(Object.keys(selects).length).toBeGreaterThan(0);
    expect(podLabels).toMatchObject(selects);
    // Ingress only: an Egress policy without rules for DNS and the database would cut hookwatch off from its store.
    expect(arr(spec['policyTypes'])).toEqual(['Ingress']);
    const admitted = arr(spec['ingress']).map(obj).flatMap((rule) => {
      expect(arr(rule['from']).length, 'a rule without sources admits everyone').toBeGreaterThan(0);
      return arr(rule['ports']).map((p) => obj(p)['port']);
    });
    const containerPorts = arr((containersOf(dep)[0] as Doc)['ports']).map((p) => obj(p)['name']);
    for (const port of admitted) expect(containerPorts, String(port)).toContain(port);
    const { doc: svc } = docs.find((d) => d.doc['kind'] === 'Service') as { doc: Doc };
    for (const p of arr(obj(svc['spec'])['ports']).map(obj)) expect(admitted, `Service port ${String(p['name'])}`).toContain(p['targetPort']);
    // The header's command applies this file, and docs/deploy.md gives the same command.
    const command = `kubectl -n hookwatch apply -f ${file}`;
    expect(read(file)).toContain(command);
    expect(read('docs/deploy.md')).toContain(command);
  });

  it.skipIf(!hasKubectl)('a change of the config file reaches the pods: the ConfigMap is named by its content, so `apply -k` rolls the pods out with it, and an unchanged file restarts nothing', () => {
    onCopy((dir) => {
      const configFile = join(dir, 'base/hookwatch.yaml');
      const original = readFileSync(configFile, 'utf8');
      for (const overlay of ['sqlite', 'postgres']) {
        const mounted = (rendered: Doc[]): { name: string; template: string; text: unknown } => {
          const dep = rendered.find((d) => d['kind'] === 'Deployment') as Doc;
          const pod = obj(obj(obj(dep['spec'])['template'])['spec']);
          const c = containersOf(dep)[0] as Doc;
          const configPath = String(arr(c['env']).map(obj).find((e) => e['name'] === 'HOOKWATCH_CONFIG')?.['value']);
          const mount = arr(c['volumeMounts']).map(obj).find((m) => m['mountPath'] === posix.dirname(configPath)) as Doc;
          // A subPath mount is never updated by the kubelet: the whole ConfigMap is mounted.
          expect(mount['subPath']).toBeUndefined();
          const name = String(obj(arr(pod['volumes']).map(obj).find((v) => v['name'] === mount['name'])?.['configMap'])['name']);
          const cm = rendered.find((d) => d['kind'] === 'ConfigMap' && obj(d['metadata'])['name'] === name);
          expect(cm, `${overlay}: the Deployment mounts ConfigMap ${name}, which the overlay renders`).toBeDefined();
          return { name, template: JSON.stringify(obj(dep['spec'])['template']), text: obj(obj(cm)['data'])[posix.basename(configPath)] };
        };
        writeFileSync(configFile, original);
        const rendered = kustomize(join(dir, overlay));
        const before = mounted(rendered);
        // The command docs/deploy.md gives for the live ConfigMap's name finds it in the Deployment.
        const jsonpath = /kubectl -n hookwatch get deploy hookwatch -o jsonpath='([^']+)'/.exec(read('docs/deploy.md'))?.[1];
        expect(jsonpath, 'the jsonpath command in docs/deploy.md').toBeDefined();
        const depFile = join(dir, `${overlay}-deployment.json`);
        writeFileSync(depFile, JSON.stringify(rendered.find((d) => d['kind'] === 'Deployment')));
        const named = spawnSync('kubectl', ['label', '--local', '-f', depFile, 'x=y', '-o', `jsonpath=${jsonpath as string}`], { encoding: 'utf8', timeout: 30_000 });
        expect(named.stdout, named.stderr).toBe(before.name);
        expect(before.text).toBe(original);
        expect(before.name).toMatch(/^hookwatch-config-[a-z0-9]{10}$/);
        expect(mounted(kustomize(join(dir, overlay))).template, `${overlay}: rendered twice from the same file`).toBe(before.template);
        writeFileSync(configFile, original.replace('maxHookSeries: 500', 'maxHookSeries: 600'));
        const after = mounted(kustomize(join(dir, overlay)));
        expect(after.text).toContain('maxHookSeries: 600');
        expect(after.name, `${overlay}: a changed file gets a new ConfigMap`).not.toBe(before.name);
        expect(after.template, `${overlay}: a changed file changes the pod template, which rolls the pods out`).not.toBe(before.template);
      }
    });
  });
});

// ---------------------------------------------------------------------------------------------------------

describe('Prometheus files', () => {
  let service: ServiceUnderTest | undefined;
  afterAll(async () => {
    await service?.close();
  });

  it('scrape configs target /metrics on the API port', () => {
    const compose = obj(parseYaml(read('deploy/prometheus/prometheus.yml')));
    const job = obj(arr(compose['scrape_configs'])[0]);
    expect(job['metrics_path']).toBe('/metrics');
    expect(arr(obj(arr(job['static_configs'])[0])['targets'])).toEqual([`hookwatch:${HTTP_PORT}`]);
    const k8s = obj(parseYaml(read('deploy/prometheus/kubernetes-scrape.yml')));
    const relabel = JSON.stringify(obj(arr(k8s['scrape_configs'])[0])['relabel_configs']);
    expect(relabel).toContain('"regex":"http"'); // the container port named http is HTTP_PORT (checked above)
  });

  it.skipIf(!hasPromtool)('promtool accepts the config and rules, and the rule unit tests pass (skipped only outside CI without promtool)', () => {
    const run = (...args: string[]): void => {
      const r = spawnSync('promtool', args, { cwd: join(ROOT, 'deploy/prometheus'), encoding: 'utf8', timeout: 90_000 });
      expect(r.status, `promtool ${args.join(' ')}\n${r.stdout}${r.stderr}`).toBe(0);
    };
    run('check', 'config', 'prometheus.yml');
    run('check', 'rules', 'rules.yml');
    run('test', 'rules', 'rules.test.yml');
    // promtool's rule unit tests take 15-20 s on a loaded two-core machine: the default 30 s is too close.
  }, 120_000);

  it('every alert of rules.yml has an alert_rule_test and every recording rule a promql_expr_test', () => {
    const rules = arr(obj(parseYaml(read('deploy/prometheus/rules.yml')))['groups']).flatMap((g) => arr(obj(g)['rules']).map(obj));
    const tests = arr(obj(parseYaml(read('deploy/prometheus/rules.test.yml')))['tests']).map(obj);
    const alertsTested = new Set(tests.flatMap((t) => arr(t['alert_rule_test']).map((a) => obj(a)['alertname'])));
    // The names an expression reads, whole: a record named as the start of another's name is not tested by it.
    const exprsTested = new Set(tests.flatMap((t) => arr(t['promql_expr_test']).flatMap((e) => String(obj(e)['expr']).match(/[\w:]+/g) ?? [])));
    const untested = rules.filter((r) => (r['alert'] !== undefined ? !alertsTested.has(r['alert']) : !exprsTested.has(String(r['record']))));
    expect(untested.map((r) => r['alert'] ?? r['record'])).toEqual([]);
  });

  it.skipIf(!hasPromtool)('every reason hookwatch refuses a request for pages through exactly one alert, or none by decision (skipped only outside CI without promtool)', () => {
    // Typed over every reason the receivers count: a new reason does not compile until it is decided here.
    const pagedBy: Record<RejectReason, string | null> = {
      bad_request: 'HookwatchRejectingRequests', too_large: 'HookwatchRejectingRequests', unsupported_media_type: 'HookwatchRejectingRequests',
      unauthenticated: 'HookwatchRejectingRequests', not_found: 'HookwatchRejectingRequests', method_not_allowed: 'HookwatchRejectingRequests',
      host_not_allowed: 'HookwatchRejectingRequests', expectation_failed: 'HookwatchRejectingRequests',
      // Refused by Node's HTTP parser (431, 413, 400), or over gRPC a header node:http2 cannot decode: not retried either.
      header_overflow: 'HookwatchRejectingRequests', chunk_extensions_overflow: 'HookwatchRejectingRequests', malformed: 'HookwatchRejectingRequests',
      overloaded: 'HookwatchOverloaded', store_unavailable: 'HookwatchStoreUnavailable', forward_queue_unavailable: 'HookwatchStoreUnavailable', internal: 'HookwatchInternalErrors',
      request_timeout: 'HookwatchRequestTimeouts',
      // A body (gRPC: message) arriving under the minimum rate: the same slow link, found sooner.
      request_too_slow: 'HookwatchRequestTimeouts',
      // The client gave up on its own request: nothing to do at hookwatch (a slow hookwatch is HookwatchStoreSlow's).
      client_aborted: null,
    };
    // Where a reason means something else on one transport. An OTLP gRPC exporter's method comes from the protocol,
    // not from its settings, so no exporter calls one hookwatch does not serve: what does is a health check or a tool
    // (an AWS ALB's gRPC health check asks /AWS.ALB/healthcheck and takes UNIMPLEMENTED for healthy), counted, not paged.
    const pagedOn: Partial<Record<`${keyof typeof REJECT_REASONS} ${RejectReason}`, string | null>> = { 'grpc not_found': null };
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-rules-'));
    try {
      const tests = (Object.keys(REJECT_REASONS) as (keyof typeof REJECT_REASONS)[]).flatMap((transport) => REJECT_REASONS[transport].map((reason: RejectReason) => {
        const alert = pagedOn[`${transport} ${reason}`] !== undefined ? pagedOn[`${transport} ${reason}`] : pagedBy[reason];
        return {
          name: `${transport} ${reason}`,
          interval: '1m',
          // A hookwatch being scraped (up at 1), as one answering requests is: no target at all is an alert of its own.
          input_series: [
            { series: 'up{job="hookwatch",instance="a:9318"}', values: '1x40' },
            { series: `hookwatch_otlp_requests_rejected_total{job="hookwatch",instance="a:9318",transport="${transport}",reason="${reason}"}`, values: '0+5x40' },
          ],
          promql_expr_test: [{ expr: 'count by (alertname) (ALERTS{alertstate="firing"})', eval_time: '25m', exp_samples: alert ? [{ labels: `{alertname="${alert}"}`, value: 1 }] : [] }],
        };
      }));
      writeFileSync(join(dir, 'test.yml'), JSON.stringify({ rule_files: [join(ROOT, 'deploy/prometheus/rules.yml')], evaluation_interval: '1m', tests }));
      const r = spawnSync('promtool', ['test', 'rules', 'test.yml'], { cwd: dir, encoding: 'utf8', timeout: 30_000 });
      expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('every hookwatch metric the rules use is one a running hookwatch exposes (forwarding on, so its metrics exist)', async () => {
    // A loopback port nothing listens on: forwarding is configured (and retries quietly) without a downstream.
    const probe = await startServiceUnderTest();
    const closedPort = new URL(probe.otlpHttpUrl).port;
    await probe.close();
    service = await startServiceUnderTest({ HOOKWATCH_FORWARD_ENDPOINT: `http://127.0.0.1:${closedPort}` });
    const text = await (await fetch(`${service.httpUrl}/metrics`)).text();
    const exposed = new Set(parseExposition(text).keys());
    const rules = read('deploy/prometheus/rules.yml');
    const used = new Set([...rules.matchAll(/\b(hookwatch_[a-z0-9_]+)/g)].map((m) => (m[1] as string).replace(/_(bucket|sum|count)$/, '')));
    expect(used.size).toBeGreaterThan(8);
    for (const name of used) expect(exposed, name).toContain(name);
  });
});

// ---------------------------------------------------------------------------------------------------------

describe('docs/deploy.md', () => {
  it('names only HOOKWATCH_* variables the app knows (or the Kubernetes service links it explains)', () => {
    const names = new Set([...read('docs/deploy.md').matchAll(/\b(HOOKWATCH_[A-Z0-9_]+)/g)].map((m) => m[1] as string).filter((n) => !isServiceLinkName(n)));
    expect(names.size).toBeGreaterThan(3);
    for (const n of names) expect(KNOWN_ENV, n).toContain(n);
  });

  it('the Claude Code settings it shows enable telemetry and point at the Collector\'s OTLP port', () => {
    const block = /```json\n(\{[\s\S]*?"env"[\s\S]*?\})\n```/.exec(read('docs/deploy.md'))?.[1];
    const env = obj(obj(JSON.parse(block ?? '{}'))['env']);
    expect(env).toMatchObject({ CLAUDE_CODE_ENABLE_TELEMETRY: '1', OTEL_LOGS_EXPORTER: 'otlp' });
    expect(new URL(String(env['OTEL_EXPORTER_OTLP_ENDPOINT'])).port).toBe('4318');
    expect(env['OTEL_EXPORTER_OTLP_PROTOCOL']).toMatch(/^(http\/protobuf|http\/json|grpc)$/);
  });
});

// ---------------------------------------------------------------------------------------------------------

describe('container helpers', () => {
  let service: ServiceUnderTest | undefined;
  afterAll(async () => {
    await service?.close();
  });

  const runNode = (file: string, env: Record<string, string>, input?: { port: string; send: (port: number) => Promise<void> }, args: string[] = []): Promise<{ code: number | null; stdout: string; stderr: string }> => new Promise((resolve) => {
    const child = spawn(process.execPath, [join(ROOT, file), ...args], { env: { PATH: process.env['PATH'] ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
      const m = /"port":(\d+)/.exec(stderr);
      if (input && m && !stderr.includes('\u0000sent')) {
        stderr += '\u0000sent';
        void input.send(Number(m[1])).finally(() => child.kill('SIGTERM'));
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });

  it('the HEALTHCHECK script exits 0 against a running hookwatch and 1 when nothing listens', async () => {
    service = await startServiceUnderTest();
    const port = new URL(service.httpUrl).port;
    expect((await runNode('deploy/docker/healthcheck.mjs', { HOOKWATCH_HTTP_ADDR: `0.0.0.0:${port}` })).code).toBe(0);
    const closed = (await startServiceUnderTest());
    const closedPort = new URL(closed.httpUrl).port;
    await closed.close();
    expect((await runNode('deploy/docker/healthcheck.mjs', { HOOKWATCH_HTTP_ADDR: `0.0.0.0:${closedPort}` })).code).toBe(1);
  });

  it('the HEALTHCHECK script given /readyz, as the Kubernetes readiness probe runs it, asks it with the credentials of the pod\'s environment', async () => {
    const servers: ServiceUnderTest[] = [];
    try {
      const token = 'probe-token-0123456789abcdef';
      const bearer = await startServiceUnderTest({ HOOKWATCH_HTTP_AUTH_MODE: 'bearer', HOOKWATCH_HTTP_AUTH_TOKEN: token });
      servers.push(bearer);
      const addr = `0.0.0.0:${new URL(bearer.httpUrl).port}`;
      const probe = async (env: Record<string, string>): Promise<number | null> => (await runNode('deploy/docker/healthcheck.mjs', { HOOKWATCH_HTTP_ADDR: addr, ...env }, undefined, ['/readyz'])).code;
      expect(await probe({ HOOKWATCH_HTTP_AUTH_MODE: 'bearer', HOOKWATCH_HTTP_AUTH_TOKEN: token })).toBe(0);
      // /readyz answers 401 without the token, or with another: not ready, where /healthz is open.
      expect(await probe({})).toBe(1);
      expect(await probe({ HOOKWATCH_HTTP_AUTH_TOKEN: `${token}x` })).toBe(1);
      expect((await runNode('deploy/docker/healthcheck.mjs', { HOOKWATCH_HTTP_ADDR: addr })).code).toBe(0);
      const basic = await startServiceUnderTest({ HOOKWATCH_HTTP_AUTH_MODE: 'basic', HOOKWATCH_HTTP_AUTH_USERNAME: 'ops', HOOKWATCH_HTTP_AUTH_PASSWORD: 'pw-0123456789' });
      servers.push(basic);
      const basicAddr = `0.0.0.0:${new URL(basic.httpUrl).port}`;
      expect((await runNode('deploy/docker/healthcheck.mjs', { HOOKWATCH_HTTP_ADDR: basicAddr, HOOKWATCH_HTTP_AUTH_USERNAME: 'ops', HOOKWATCH_HTTP_AUTH_PASSWORD: 'pw-0123456789' }, undefined, ['/readyz'])).code).toBe(0);
      expect((await runNode('deploy/docker/healthcheck.mjs', { HOOKWATCH_HTTP_ADDR: basicAddr, HOOKWATCH_HTTP_AUTH_USERNAME: 'ops', HOOKWATCH_HTTP_AUTH_PASSWORD: 'wrong' }, undefined, ['/readyz'])).code).toBe(1);
      // A store not open yet: /readyz answers 503 with the right credentials, so the probe fails.
      await bearer.store.close();
      expect(await probe({ HOOKWATCH_HTTP_AUTH_TOKEN: token })).toBe(1);
    } finally {
      for (const s of servers) await s.close();
    }
  });

  it.skipIf(!HAVE_OPENSSL)('the HEALTHCHECK script asks over https when the port speaks TLS, set in the environment or the config file, mutual TLS included', async () => {
    const tmp = tempDir('hookwatch-healthcheck-tls-');
    const ca = certAuthority(tmp.dir, 'health');
    const cert = issue(ca, 'hookwatch', 'server');
    const servers: ServiceUnderTest[] = [];
    try {
      const check = async (env: Record<string, string>, checkEnv: (port: string) => Record<string, string>): Promise<number | null> => {
        const s = await startServiceUnderTest(env);
        servers.push(s);
        expect(s.httpUrl).toMatch(/^https:/);
        return (await runNode('deploy/docker/healthcheck.mjs', checkEnv(new URL(s.httpUrl).port))).code;
      };
      const tls = { HOOKWATCH_HTTP_TLS_CERT_FILE: cert.certFile, HOOKWATCH_HTTP_TLS_KEY_FILE: cert.keyFile };
      // As the image runs it: the same variables for hookwatch and the check.
      expect(await check(tls, (port) => ({ ...tls, HOOKWATCH_HTTP_ADDR: `0.0.0.0:${port}` }))).toBe(0);
      // TLS from the config file: the check sees only the address, and is answered 400 over plain HTTP first.
      expect(await check(tls, (port) => ({ HOOKWATCH_HTTP_ADDR: `0.0.0.0:${port}` }))).toBe(0);
      const mutual = { ...tls, HOOKWATCH_HTTP_TLS_CLIENT_CA_FILE: ca.certFile };
      expect(await check(mutual, (port) => ({ ...mutual, HOOKWATCH_HTTP_ADDR: `0.0.0.0:${port}` }))).toBe(0);
      const closed = servers.pop()!;
      await closed.close();
      expect((await runNode('deploy/docker/healthcheck.mjs', { ...mutual, HOOKWATCH_HTTP_ADDR: `0.0.0.0:${new URL(closed.httpUrl).port}` })).code).toBe(1);
    } finally {
      for (const s of servers) await s.close();
      tmp.cleanup();
    }
  });

  it('webhook-echo prints each notification as one JSON line and checks Standard Webhooks signatures', async () => {
    const secret = `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`;
    const body = JSON.stringify({ version: '4', status: 'firing', alerts: [{ status: 'firing', labels: { alertname: 'HookOutputPersisted', hook_name: 'SessionStart:startup' } }] });
    const statuses: number[] = [];
    const result = await runNode('deploy/webhook-echo/server.mjs', { PORT: '0', HOST: '127.0.0.1', WEBHOOK_SECRET: secret, FAIL_FIRST: '1' }, {
      port: 'PORT',
      send: async (port) => {
        const ts = String(Math.floor(Date.now() / 1000));
        const sig = createHmac('sha256', Buffer.from(secret.slice(6), 'base64')).update(`msg_1.${ts}.${body}`).digest('base64');
        for (const signature of [`v1,${sig}`, `v1,${sig}`, 'v1,AAAA']) {
          const res = await fetch(`http://127.0.0.1:${port}/alerts`, { method: 'POST', headers: { 'content-type': 'application/json', 'webhook-id': 'msg_1', 'webhook-timestamp': ts, 'webhook-signature': signature }, body });
          statuses.push(res.status);
          await res.arrayBuffer();
        }
      },
    });
    expect(result.code).toBe(0);
    expect(statuses).toEqual([503, 200, 200]);
    const lines = result.stdout.trim().split('\n').map((l) => JSON.parse(l) as { signature: string; status: string; alerts: { alertname: string; hook: string }[] });
    expect(lines.map((l) => l.signature)).toEqual(['valid', 'valid', 'invalid']);
    expect(lines[0]?.alerts).toEqual([{ status: 'firing', alertname: 'HookOutputPersisted', hook: 'SessionStart:startup' }]);
  });

  /** webhook-echo run with WEBHOOK_SECRET `secrets`, sent one signed request per [secret, timestamp]: what it said of each signature. */
  async function echoVerdicts(secrets: string, sends: [string, string][]): Promise<string[]> {
    const body = JSON.stringify({ version: '4', status: 'firing', alerts: [] });
    // Signed as hookwatch signs, with the secret and timestamp given.
    const sign = (secret: string, ts: string): string => `v1,${createHmac('sha256', Buffer.from(secret.slice(6), 'base64')).update(`msg_1.${ts}.${body}`).digest('base64')}`;
    const result = await runNode('deploy/webhook-echo/server.mjs', { PORT: '0', HOST: '127.0.0.1', WEBHOOK_SECRET: secrets }, {
      port: 'PORT',
      send: async (port) => {
        for (const [secret, ts] of sends) {
          const res = await fetch(`http://127.0.0.1:${port}/alerts`, { method: 'POST', headers: { 'content-type': 'application/json', 'webhook-id': 'msg_1', 'webhook-timestamp': ts, 'webhook-signature': sign(secret, ts) }, body });
          await res.arrayBuffer();
        }
      },
    });
    expect(result.code).toBe(0);
    return result.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { signature: string }).signature);
  }
  const whsec = (text: string): string => `whsec_${Buffer.from(text).toString('base64')}`;

  it('webhook-echo calls a signature over a timestamp more than 5 minutes off invalid: a replayed request', async () => {
    const secret = whsec('0123456789abcdef0123456789abcdef');
    const now = Math.floor(Date.now() / 1000);
    const stamps = [String(now), String(now - 240), String(now + 240), String(now - 600), String(now + 600), String(now - 86_400), `${now}.5`, 'soon'];
    expect(await echoVerdicts(secret, stamps.map((ts) => [secret, ts]))).toEqual(['valid', 'valid', 'valid', 'invalid', 'invalid', 'invalid', 'invalid', 'invalid']);
  });

  it('webhook-echo takes several secrets, space-separated, while one is rotated', async () => {
    const [older, newer, other] = [whsec('0123456789abcdef0123456789abcdef'), whsec('fedcba9876543210fedcba9876543210'), whsec('ffffffffffffffffffffffffffffffff')];
    const now = String(Math.floor(Date.now() / 1000));
    expect(await echoVerdicts(`${newer} ${older}`, [[older, now], [newer, now], [other, now]])).toEqual(['valid', 'valid', 'invalid']);
  });
});
