/**
 * The hookwatch commands but `guard`: `serve` (default) runs the service; `config` prints the effective
 * configuration with secrets redacted; `backup` copies the SQLite store while it is served, `restore` puts such a copy back once it is stopped; `check` and `scan`
 * measure hook output before it ships and in transcripts.
 * Loaded by ../main.ts only for these commands, so a guarded hook never pays for it.
 */
import { ConfigError, SETTINGS, configSecrets, flagName, loadConfig, settingForFlag, toConfig } from '../config/index.ts';
import { SettingPathError } from '../config/setting.ts';
import { coerceText } from '../config/load.ts';
import { commandIndex, parseFlags } from './args.ts';
import { BACKUP_FLAGS, COPY_SETTINGS, runBackup } from './backup.ts';
import { RESTORE_FLAGS, runRestore } from './restore.ts';
import { renderConfig } from './config-output.ts';
import { COMMANDS, commandHelp, configFlagNames, globalHelp } from './help.ts';
import { didYouMean } from './suggest.ts';
import { ListenError } from '../net/listen-error.ts';
import { UsageError } from '../tools/common/args.ts';
import { exitBySignal, processIO } from '../tools/common/io.ts';
import type { ToolIO } from '../tools/common/io.ts';
import { HOOKWATCH_VERSION } from '../version.ts';
import { createLogger, silentLogger } from '../telemetry/logger.ts';
import { redactUrlPassword } from '../config/values.ts';
import { redactUrlCredentials } from '../net/otlp-url.ts';
import { isLoopbackAddr } from '../net/addr.ts';
import { isPostgresUrl } from '../store/settings.ts';
import { ClientTlsCredentials, TlsCredentials } from '../net/tls.ts';
import { baseUrl } from '../notify/links.ts';
import { defaultRulesOffWarning } from '../alerting/settings.ts';
import { openAlertEventTls } from '../notify/otlp.ts';
import { ReloadStoppingError, type ConfigSource } from '../config-reload.ts';
import { printable } from '../../../shared/src/printable.ts';

/** How a listener speaks: plain text, TLS, or TLS with client certificates. */
function tlsMode(tls: { clientCaFile: string } | undefined): 'off' | 'tls' | 'mutual' {
  return !tls ? 'off' : tls.clientCaFile !== '' ? 'mutual' : 'tls';
}

/**
 * Ports open beyond this machine with nothing asked of callers, or with credentials that cross the network in
 * clear: said at start, as a trusted network (or a proxy terminating TLS in front) may want it so, but nobody
 * should find out later. A client certificate under mutual TLS counts as asking.
 */
export function exposureWarnings(config: ReturnType<typeof toConfig>): string[] {
  const out: string[] = [];
  const httpOpen = !isLoopbackAddr(config.http.addr);
  if (httpOpen && config.http.auth.mode === 'none' && tlsMode(config.http.tls) !== 'mutual') {
    out.push(`the API and dashboard listen on ${config.http.addr} without authentication: anyone who can reach it reads hook data and can create silences; set http.auth.mode (or listen on 127.0.0.1 behind an authenticating proxy)`);
  }
  if (httpOpen && (config.http.auth.mode === 'basic' || config.http.auth.mode === 'bearer') && !config.http.tls) {
    out.push(`the API and dashboard listen on ${config.http.addr} without TLS: the ${config.http.auth.mode === 'basic' ? 'password' : 'token'} of http.auth.mode ${config.http.auth.mode} crosses the network in clear; set http.tls.certFile and http.tls.keyFile (or terminate TLS in a proxy in front)`);
  }
  // The proxy in front is then the only check: a client that reaches the port itself names any user it likes.
  if (httpOpen && config.http.auth.mode === 'proxy-header' && tlsMode(config.http.tls) !== 'mutual') {
    out.push(`the API and dashboard listen on ${config.http.addr} with http.auth.mode proxy-header: anyone who can reach it can set ${config.http.auth.proxyHeader} and is let in; listen on 127.0.0.1 behind the proxy (or require a client certificate: http.tls.clientCaFile)`);
  }
  const open = [config.otlp.http.addr, config.otlpGrpc.addr].filter((a) => !isLoopbackAddr(a));
  if (open.length > 0 && config.otlp.ingestToken === '' && tlsMode(config.otlp.tls) !== 'mutual') {
    out.push(`the OTLP receivers listen on ${open.join(' and ')} without otlp.ingestToken: anyone who can reach them can send telemetry`);
  }
  if (open.length > 0 && config.otlp.ingestToken !== '' && !config.otlp.tls) {
    out.push(`the OTLP receivers listen on ${open.join(' and ')} without TLS: otlp.ingestToken crosses the network in clear with every request; set otlp.tls.certFile and otlp.tls.keyFile (or terminate TLS in a proxy or OpenTelemetry Collector in front)`);
  }
  return out;
}

async function serve(flags: Record<string, string | undefined>, env: NodeJS.ProcessEnv): Promise<number> {
  const { startService } = await import('../service.ts');
  const { StoreWait, StoreWaitGivenUpError } = await import('../store/open.ts');
  const loaded = loadConfig({ flags, env });
  const config = toConfig(loaded);
  const logger = createLogger({ level: config.log.level, secrets: configSecrets(config) });
  // A reload reads the file (refused empty), the environment and the flags as the start did; a new receiver's URL
  // or token is scrubbed from the log before anything can log it.
  const configSource: ConfigSource = {
    loaded,
    load: () => {
      const next = loadConfig({ flags, env, reload: true });
      const nextConfig = toConfig(next);
      logger.addSecrets?.(configSecrets(nextConfig));
      return { loaded: next, config: nextConfig };
    },
  };
  for (const warning of loaded.warnings) logger.warn(warning);
  // At once, not after the store opens: a replica waiting for its database (minutes, maybe) listens meanwhile.
  for (const w of exposureWarnings(config)) logger.warn(w);
  const rulesOff = defaultRulesOffWarning(config.alerting.rules);
  if (rulesOff) logger.warn(rulesOff);
  // Signal handlers go in before anything announces readiness: a supervisor (or a test) that sends SIGTERM
  // as soon as it reads "hookwatch started" must never hit the default action, which kills without draining.
  let service: Awaited<ReturnType<typeof startService>> | undefined = undefined;
  let signals = 0;
  // A PostgreSQL server not up yet (or another replica's schema migration) is waited for with the ports open: a
  // stop meanwhile ends the start cleanly, exit 0 (nothing changed on the database, every request refused with
  // Retry-After). One asked for once this replica migrates exits 1 at once, as before: what the migration did so
  // far is rolled back by the server or taken up by the next start (each version is one transaction, or an index
  // build or column fill made again, store/postgres/migrate.ts), where waiting for its end could outlast any grace
  // period. On SQLite a stop during the start exits 1 too, but during a schema migration (on a worker thread,
  // store/sqlite/schema.ts schemaChanging), where Node's exit would wait for the SQL statement under way (an index
  // built over millions of events: minutes, past a stop's grace period), the process ends by the signal, at once:
  // the version under way, one transaction, is left whole, rolled back by SQLite as the file is next opened (or
  // committed, if it was ending).
  const { schemaChanging } = await import('../store/sqlite/schema.ts');
  const storeWait = isPostgresUrl(config.db) ? new StoreWait() : undefined;
  let stoppedBy: string | undefined;
  const onSignal = (signal: string): void => {
    signals++;
    if (signals === 1 && !service && storeWait?.giveUp()) {
      stoppedBy = signal;
      return;
    }
    if (!service && schemaChanging()) {
      logger.warn('signal during the schema migration: exiting now; the version under way is rolled back', { signal });
      exitBySignal(signal as NodeJS.Signals);
    }
    if (signals > 1 || !service) {
      logger.warn(service ? 'second signal: exiting now' : 'signal during start: exiting now', { signal });
      process.exit(1);
    }
    logger.info('shutting down', { signal });
    // Kept referenced: it is what keeps the process alive when a step waits on something that holds no handle (a
    // promise behind a connection already closed). Without it the event loop would run dry and Node exit 0 at
    // once, the stop half done and nothing logged. Every stop so ends in a line saying how it went: exit 0 only
    // when every step finished, 1 otherwise.
    // The line names the steps still in progress (and any already cut off): what hung.
    const running = service;
    setTimeout(() => {
      logger.error('shutdown took too long; exiting', { timeoutMs: config.shutdown.timeoutMs, ...running.shutdownProgress() });
      process.exit(1);
    }, config.shutdown.timeoutMs);
    service.stop().then(
      ({ unfinished }) => {
        // Exit 0 only for a clean stop; a step cut off or undone (the lease left to expire) is an unclean one.
        if (unfinished.length === 0) {
          logger.info('stopped');
          process.exit(0);
        }
        logger.error('stopped without finishing every shutdown step', { unfinished });
        process.exit(1);
      },
      (err: unknown) => {
        logger.error('shutdown failed', { err });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  // SIGHUP reloads the configuration, as it does Prometheus' and Alertmanager's (its default action would kill
  // the process). One that arrives during the start is done once the service runs: the file may have changed after
  // the start read it. A failed reload is logged by the reload itself.
  let reloadPending = false;
  const reload = (): void => {
    if (!service) {
      reloadPending = true;
      return;
    }
    logger.info('reloading the configuration', { signal: 'SIGHUP' });
    service.reload().catch((err: unknown) => {
      // A refusal while stopping is no failure (a failed reload is logged by the reload itself).
      if (err instanceof ReloadStoppingError) logger.info(err.message, { signal: 'SIGHUP' });
    });
  };
  process.on('SIGHUP', reload);
  try {
    service = await startService(config, { logger, configSource, ...(storeWait ? { storeWait } : {}) });
  } catch (err) {
    // Nothing to drain: the caller reports the error and exits.
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    process.off('SIGHUP', reload);
    if (!(err instanceof StoreWaitGivenUpError)) throw err;
    logger.info('stopped while waiting for the database', { signal: stoppedBy });
    return 0;
  }
  if (reloadPending) reload();
  logger.info('hookwatch started', {
    otlpHttp: service.otlpHttpUrl,
    otlpGrpc: service.otlpGrpcUrl,
    forwardTo: service.forwarding?.exporter.description ?? null,
    http: service.httpUrl,
    // Where each port listens (the URLs above are where a client on this machine reaches it).
    listen: { otlpHttp: config.otlp.http.addr, otlpGrpc: config.otlpGrpc.addr, http: config.http.addr },
    tls: { otlp: tlsMode(config.otlp.tls), http: tlsMode(config.http.tls) },
    store: service.store.kind,
    db: redactUrlPassword(config.db),
    configFile: loaded.file ?? null,
  });
  // The line a person starting hookwatch looks for: where the dashboard is and where to send telemetry.
  // As notifications link to it: without the user name, password, query or fragment alerting.externalUrl may hold.
  const dashboard = `${baseUrl(service)}/`;
  const [httpLabel, grpcLabel] = config.otlp.tls ? ['https', 'grpcs'] : ['http', 'grpc'];
  logger.info(`dashboard at ${dashboard}; send OTLP to ${service.otlpHttpUrl} (${httpLabel}) or ${service.otlpGrpcUrl} (${grpcLabel})`, { dashboard });
  return new Promise<number>(() => {});
}

const COMMAND_NAMES = COMMANDS.map((c) => c.name);

/**
 * A setting flag's bad value is a mistake on the command line (UsageError: printed with a pointer to the
 * command's help, exit status 2), found here with the check loadConfig makes, before anything starts. With `only`
 * (backup and restore), the flags of other settings are left to the command, which warns of a bad one and goes on.
 */
function checkFlagValues(flags: Record<string, string | undefined>, only?: ReadonlySet<string>): void {
  for (const [name, value] of Object.entries(flags)) {
    const setting = settingForFlag(name);
    if (!setting || value === undefined || (only && !only.has(setting.key))) continue;
    try {
      coerceText(setting, value, `flag --${name}`);
    } catch (err) {
      throw err instanceof ConfigError ? new UsageError(err.message, { cause: err }) : err;
    }
  }
}

/** Where a setting is set besides the file, as ` (HOOKWATCH_HTTP_ADDR, --http-addr)`. */
function settingSources(key: string): string {
  const s = SETTINGS.find((x) => x.key === key);
  return s ? ` (${[s.env, flagName(s.key)].filter(Boolean).join(', ')})` : '';
}

/** The message for a listener that could not bind: which setting, which variable and flag change it. */
function listenErrorMessage(err: ListenError): string {
  const where = settingSources(err.setting);
  if (err.reason === 'in-use') return `${err.message}${where}: another process listens there; stop it or choose another address`;
  if (err.reason === 'denied') return `${err.message}${where}: ports below 1024 need privileges; choose a port above 1024`;
  return `${err.message}${where}`;
}

/** Runs one command line; returns the exit status (`serve` runs until a signal). `io` lets tests run it in-process. */
export async function runCommand(argv: readonly string[], io: ToolIO = processIO()): Promise<number> {
  // The command comes first, or after flags, which then count as given after it.
  const at = commandIndex(argv, configFlagNames(), COMMAND_NAMES);
  const named = at === undefined ? undefined : argv[at];
  let command = 'serve';
  let args = argv;
  if (at !== undefined && named !== undefined) {
    if (!COMMAND_NAMES.includes(named)) {
      io.stderr(`hookwatch: unknown command ${JSON.stringify(named)}${didYouMean(named, COMMAND_NAMES)}\nRun "hookwatch --help" for the commands.\n`);
      return 2;
    }
    command = named;
    args = [...argv.slice(0, at), ...argv.slice(at + 1)];
  }
  // "hookwatch --help" is the overview; "hookwatch serve --help" the command's own.
  const helpFor = command === 'serve' && named !== 'serve' ? 'hookwatch' : command;
  try {
    if (command === 'guard') {
      const { guardMain } = await import('../tools/guard/main.ts');
      return await guardMain([...args]);
    }
    if (command === 'check') {
      const { runCheck } = await import('../tools/check/index.ts');
      return await runCheck([...args], io);
    }
    if (command === 'scan') {
      const { runScan } = await import('../tools/scan/index.ts');
      return await runScan([...args], io);
    }
    if (command === 'help') {
      // "hookwatch help --help" (or -h) asks for help about help: the overview.
      const topic = args[0] === '--help' || args[0] === '-h' ? undefined : args[0];
      if (topic === 'check' || topic === 'scan') return await runCommand([topic, '--help'], io);
      if (topic === 'guard') {
        const { runGuard } = await import('../tools/guard/index.ts');
        const exit = await runGuard(['--help'], { stdin: process.stdin, stdout: async (data) => io.stdout(String(data)), stderr: io.stderr, env: io.env, cwd: io.cwd });
        return 'code' in exit ? exit.code : 1;
      }
      if (topic !== undefined && !COMMAND_NAMES.includes(topic)) {
        // The same words as for "hookwatch <unknown>": what helps is the list of commands, not help's own flags.
        io.stderr(`hookwatch: unknown command ${JSON.stringify(topic)}${didYouMean(topic, COMMAND_NAMES)}\nRun "hookwatch --help" for the commands.\n`);
        return 2;
      }
      io.stdout(topic ? (commandHelp(topic) ?? globalHelp()) : globalHelp());
      return 0;
    }
    const extraFlags = command === 'backup' ? BACKUP_FLAGS : command === 'restore' ? RESTORE_FLAGS : undefined;
    const parsed = extraFlags ? parseFlags(args, [...configFlagNames(), ...extraFlags.values], extraFlags.booleans) : parseFlags(args, configFlagNames());
    if (parsed.booleans.has('help')) {
      io.stdout(helpFor === 'hookwatch' ? globalHelp() : (commandHelp(command) ?? globalHelp()));
      return 0;
    }
    if (command === 'version' || parsed.booleans.has('version')) {
      io.stdout(`hookwatch ${HOOKWATCH_VERSION} (Node.js ${process.versions.node})\n`);
      return 0;
    }
    // A mistyped command after flags (`hookwatch --db x.db confg`) is taken for an argument: name the command it is near.
    const extra = parsed.positionals[0];
    if (extra !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(extra)}${named === undefined ? didYouMean(extra, COMMAND_NAMES) : ''}`);
    if (parsed.booleans.has('json') && command !== 'config') throw new UsageError('unknown flag --json (only "hookwatch config" takes it)');
    checkFlagValues(parsed.flags, extraFlags ? COPY_SETTINGS : undefined);
    if (command === 'backup') return await runBackup(parsed, io);
    if (command === 'restore') return await runRestore(parsed, io);
    if (command === 'config') {
      const loaded = loadConfig({ flags: parsed.flags, env: io.env });
      // The checks across settings that serve runs: a configuration serve refuses is not printed as valid.
      const config = toConfig(loaded);
      // The TLS files too (the listeners', forwarding's, the alert receivers', the alert events'): a key that does
      // not match its certificate stops serve, so it is no valid configuration.
      for (const tls of [config.otlp.tls, config.http.tls]) if (tls) TlsCredentials.open(tls, silentLogger);
      if (config.forward.endpoint && config.forward.tls) ClientTlsCredentials.open(config.forward.tls, silentLogger);
      for (const r of config.alerting.receivers) if (r.tls) ClientTlsCredentials.open(r.tls, silentLogger);
      openAlertEventTls(config.alerting.otlp, silentLogger);
      const rulesOff = defaultRulesOffWarning(config.alerting.rules);
      for (const warning of [...loaded.warnings, ...(rulesOff ? [rulesOff] : [])]) io.stderr(`hookwatch: warning: ${printable(warning)}\n`);
      const derived = [
        { key: 'otlp.maxInflightBytes', value: config.otlp.maxInflightBytes, why: 'raised to twice otlp.maxRequestBytes' },
        { key: 'retention.minuteRollups', value: config.retention.minuteRollupsMs, why: 'cut to retention.events' },
        ...(config.privacy.hash.length === (loaded.values.get('privacy.hash') as string[]).length ? [] : [{ key: 'privacy.hash', value: config.privacy.hash, why: 'privacy.drop takes the attributes it lists' }]),
      ];
      io.stdout(renderConfig(loaded, parsed.booleans.has('json') ? 'json' : 'yaml', derived));
      return 0;
    }
    return await serve(parsed.flags, io.env);
  } catch (err) {
    // What a message names (a path, a value from the file or the environment) is written out as printable() gives
    // it: no line of its own, no text turned around.
    const hint = `Run "${helpFor === 'hookwatch' ? 'hookwatch' : `hookwatch ${helpFor}`} --help" for the flags.`;
    if (err instanceof UsageError) {
      io.stderr(`hookwatch: ${printable(err.message)}\n${hint}\n`);
      return 2;
    }
    if (err instanceof ConfigError) {
      io.stderr(`hookwatch: configuration error: ${printable(err.message)}\n`);
      return 2;
    }
    if (err instanceof ListenError) {
      io.stderr(`hookwatch: ${printable(listenErrorMessage(err))}\n`);
      return 1;
    }
    if (err instanceof SettingPathError) {
      io.stderr(`hookwatch: ${printable(`${err.setting} ${err.path}${settingSources(err.setting)}: ${err.detail}`)}\n`);
      return 1;
    }
    const e = err as NodeJS.ErrnoException;
    // A library's message may quote a URL it was given, credentials and all.
    io.stderr(`hookwatch: ${printable(redactUrlCredentials(e.message ?? String(err)))}\n`);
    return 1;
  }
}
