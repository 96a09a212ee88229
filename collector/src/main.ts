/**
 * The hookwatch command: `serve` (default) runs the service; `config` prints the effective configuration
 * with secrets redacted; `check` and `scan` measure hook output before it ships and in transcripts; `guard`
 * wraps a hook command. The service's modules are loaded only by the commands that need them: `guard` runs on
 * every tool call and must start fast.
 */
import { enableCompileCache } from 'node:module';

import type { Setting } from './config/schema.ts';

const helpText = (SETTINGS: readonly Setting[], flagName: (key: string) => string): string => `hookwatch: tells a team when their Claude Code hooks stop reaching the model.

Usage:
  hookwatch [serve] [flags]     receive OTLP, store per-hook delivery, serve the API and dashboard
  hookwatch config [flags]      print the effective configuration (secrets redacted) and exit
  hookwatch check [...] -- cmd  run a hook command and measure its output against the 10,000-character cap
  hookwatch scan [paths...]     scan Claude Code transcripts for persisted hook output
  hookwatch guard [...] -- cmd  run a hook command and keep each output within budget (~9,500 instead of ~2,000)
  hookwatch help                this text

Configuration (lowest to highest): defaults < file (--config FILE or HOOKWATCH_CONFIG) < environment < flags.
Flags:
  --config FILE                 YAML or JSON config file
${SETTINGS.filter((s) => s.env).map((s) => `  ${`${flagName(s.key)} VALUE`.padEnd(36)}${s.env} (default ${JSON.stringify(s.default)})`).join('\n')}

See README.md and docs/configuration.md for every setting.
`;

async function serve(flags: Record<string, string | undefined>): Promise<number> {
  const { loadConfig, toConfig } = await import('./config/index.ts');
  const { startService } = await import('./service.ts');
  const { alertingSecrets } = await import('./alerting/config.ts');
  const { createLogger, urlPasswords } = await import('./telemetry/logger.ts');
  const loaded = loadConfig({ flags });
  const config = toConfig(loaded);
  const secrets = [config.otlp.ingestToken, config.http.auth.password, config.http.auth.token, ...Object.values(config.forward.headers), ...alertingSecrets(config.alerting.receivers, config.alerting.otlp.headers), ...[config.db, config.forward.endpoint, config.alerting.otlp.endpoint].flatMap(urlPasswords)].filter(Boolean);
  const logger = createLogger({ level: config.log.level, secrets });
  // Signal handlers go in before anything announces readiness: a supervisor (or a test) that sends SIGTERM
  // as soon as it reads "hookwatch started" must never hit the default action, which kills without draining.
  let service: Awaited<ReturnType<typeof startService>> | undefined = undefined;
  let signals = 0;
  const onSignal = (signal: string): void => {
    signals++;
    if (signals > 1 || !service) {
      logger.warn(service ? 'second signal: exiting now' : 'signal during start: exiting now', { signal });
      process.exit(1);
    }
    logger.info('shutting down', { signal });
    const deadline = setTimeout(() => {
      logger.error('shutdown took too long; exiting', { timeoutMs: config.shutdown.timeoutMs });
      process.exit(1);
    }, config.shutdown.timeoutMs);
    deadline.unref();
    service.stop().then(
      () => {
        logger.info('stopped');
        process.exit(0);
      },
      (err: unknown) => {
        logger.error('shutdown failed', { err });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  service = await startService(config, { logger });
  logger.info('hookwatch started', {
    otlpHttp: service.otlpHttpUrl,
    otlpGrpc: service.otlpGrpcUrl,
    forwardTo: service.forwarding?.exporter.description ?? null,
    http: service.httpUrl,
    store: service.store.kind,
    configFile: loaded.file ?? null,
  });
  return new Promise<number>(() => {});
}

export async function main(argv: readonly string[]): Promise<number> {
  if (argv[0] === 'guard') {
    const { guardMain } = await import('./tools/guard/main.ts');
    return guardMain(argv.slice(1));
  }
  const known = ['serve', 'config', 'check', 'scan', 'help'];
  const command = argv[0] && known.includes(argv[0]) ? argv[0] : 'serve';
  const args = command === argv[0] ? argv.slice(1) : argv;
  const { ConfigError, SETTINGS, effectiveDocument, flagName, loadConfig } = await import('./config/index.ts');
  const { parseFlags } = await import('./cli/args.ts');
  const io = { stdout: (s: string) => process.stdout.write(s), stderr: (s: string) => process.stderr.write(s), env: process.env, cwd: process.cwd() };
  try {
    if (command === 'check') {
      const { runCheck } = await import('./tools/check/index.ts');
      return await runCheck([...args], io);
    }
    if (command === 'scan') {
      const { runScan } = await import('./tools/scan/index.ts');
      return await runScan([...args], io);
    }
    const parsed = parseFlags(args);
    if (command === 'help' || parsed.booleans.has('help')) {
      process.stdout.write(helpText(SETTINGS, flagName));
      return 0;
    }
    if (parsed.positionals.length > 0) throw new ConfigError(`unexpected argument ${JSON.stringify(parsed.positionals[0])}`);
    if (command === 'config') {
      const loaded = loadConfig({ flags: parsed.flags });
      const doc = effectiveDocument(loaded);
      const { stringify } = await import('yaml');
      process.stdout.write(parsed.booleans.has('json') ? JSON.stringify(doc, null, 2) + '\n' : stringify(doc));
      return 0;
    }
    return await serve(parsed.flags);
  } catch (err) {
    if (err instanceof ConfigError || (err instanceof Error && /^flag /.test(err.message))) {
      process.stderr.write(`hookwatch: configuration error: ${err.message}\n`);
      return 2;
    }
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'EADDRINUSE' || e.code === 'EACCES') {
      process.stderr.write(`hookwatch: cannot listen: ${e.message}\n`);
      return 1;
    }
    process.stderr.write(`hookwatch: ${e.message ?? String(err)}\n`);
    return 1;
  }
}

if (import.meta.main) {
  // As in bin/hookwatch.mjs: later starts (a guarded hook runs on every tool call) reuse the compiled sources.
  enableCompileCache?.();
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`hookwatch: ${(err as Error).message}\n`);
      process.exit(1);
    },
  );
}
