/**
 * The typed configuration the rest of hookwatch sees, built once at start from the loaded settings. Each stage
 * reads and checks its own part (its `settings.ts`); this file only hands every stage the loaded values, and
 * passes the configured dimensions to the stages whose settings are checked against them. Two checks span
 * stages: the three listeners (two of the receivers, one of the API) never ask for one port, and the forwarding
 * queue and the SQLite store never share a file.
 */
import { alertingConfig, type AlertingConfig } from '../alerting/settings.ts';
import { apiConfig, type ApiSettings } from '../api/settings.ts';
import { cliConfig, type CliSettings } from '../cli/settings.ts';
import { forwardConfig, type ForwardConfig } from '../forward/settings.ts';
import { dimensionNames, pipelineConfig, type PipelineSettings } from '../pipeline/settings.ts';
import { privacyConfig, type PrivacyConfig } from '../privacy/settings.ts';
import { receiverConfig, type ReceiverSettings } from '../receiver/settings.ts';
import { isInMemory, isPostgresUrl, sqliteFiles, storeConfig, type SqliteFile, type StoreSettings } from '../store/settings.ts';
import { telemetryConfig, type TelemetrySettings } from '../telemetry/settings.ts';
import { ConfigError, type LoadedConfig } from './load.ts';
import { SettingReader } from './setting-reader.ts';
import { splitAddr } from '../net/addr.ts';
import { alertingSecrets } from '../notify/settings.ts';
import { headerSecrets, urlPasswords } from './values.ts';

export type HookwatchConfig = ReceiverSettings & ApiSettings & StoreSettings & PipelineSettings & { privacy: PrivacyConfig } & { forward: ForwardConfig } & TelemetrySettings & CliSettings & { alerting: AlertingConfig };

export function toConfig(loaded: LoadedConfig): HookwatchConfig {
  const r = new SettingReader(loaded.values, loaded.sources);
  const pipeline = pipelineConfig(r);
  distinctPorts([['otlp.http.addr', r.string('otlp.http.addr')], ['otlp.grpc.addr', r.string('otlp.grpc.addr')], ['http.addr', r.string('http.addr')]]);
  distinctFiles(r.string('forward.queue.path'), r.string('db'));
  return {
    ...receiverConfig(r),
    ...apiConfig(r),
    ...storeConfig(r),
    ...pipeline,
    privacy: privacyConfig(r, pipeline.dimensions),
    ...forwardConfig(r),
    ...telemetryConfig(r),
    ...cliConfig(r),
    ...alertingConfig(r, dimensionNames(pipeline.dimensions)),
  };
}

/**
 * Every secret the configuration holds, for the log scrubber: the tokens, passwords and hash key, header values,
 * the alert receivers' credentials and the passwords in URLs. Each is at least MIN_SECRET_CHARS long (shorter
 * ones are refused at load), so each is scrubbed.
 */
export function configSecrets(config: HookwatchConfig): string[] {
  return [
    config.otlp.ingestToken, config.privacy.hashKey, config.http.auth.password, config.http.auth.token, ...headerSecrets(config.forward.headers),
    ...alertingSecrets(config.alerting.receivers, config.alerting.otlp.headers),
    ...[config.db, config.forward.endpoint, config.alerting.otlp.endpoint, config.alerting.externalUrl].flatMap(urlPasswords),
  ].filter(Boolean);
}

const ANY_HOST = new Set(['0.0.0.0', '::', '']);

/**
 * Two listeners on one port (port 0 aside: the system picks a free one each) would fail at start with a
 * message about "another process", though it is this one: refused here, naming both settings.
 */
function distinctPorts(addrs: readonly (readonly [string, string])[]): void {
  const parsed = addrs.map(([key, addr]) => ({ key, addr, ...splitAddr(addr) }));
  for (const [i, a] of parsed.entries()) {
    for (const b of parsed.slice(i + 1)) {
      if (a.port === 0 || a.port !== b.port) continue;
      if (a.host === b.host || ANY_HOST.has(a.host) || ANY_HOST.has(b.host)) {
        throw new ConfigError(`${a.key} (${a.addr}) and ${b.key} (${b.addr}) ask for the same port: each listener needs its own`);
      }
    }
  }
}

/**
 * The forwarding queue on the store's file (or on a file SQLite or the store's lock keeps beside it) would fail at
 * start with a message about "another process", though it is this one, or worse, through a link the lock does
 * not see, write the queue's tables into the store: refused here, naming both settings.
 */
function distinctFiles(queue: string, db: string): void {
  if (isPostgresUrl(db) || isInMemory(db) || isInMemory(queue)) return;
  const ofQueue = sqliteFiles(queue);
  const ofDb = sqliteFiles(db);
  const shared = (q: (f: SqliteFile) => boolean, d: (f: SqliteFile) => boolean): [SqliteFile, SqliteFile] | undefined => {
    for (const a of ofQueue.filter(q)) for (const b of ofDb.filter(d)) if (a.file === b.file) return [a, b];
    return undefined;
  };
  const itself = (f: SqliteFile): boolean => f.beside === '';
  const any = (): boolean => true;
  const same = shared(itself, itself);
  const both = `forward.queue.path (${queue}) and db (${db})`;
  const own = 'the store and the forwarding queue each need a SQLite file of their own';
  if (same) throw new ConfigError(`${both} name the same file (${same[0].file}): ${own}`);
  const clash = shared(itself, any) ?? shared(any, itself) ?? shared(any, any);
  if (!clash) return;
  const [a, b] = clash;
  const name = (f: SqliteFile, key: string): string => (f.beside ? `the ${f.beside} file of ${key}` : key);
  const [subject, what] = b.beside === '' ? [name(b, 'db'), name(a, 'forward.queue.path')] : [name(a, 'forward.queue.path'), name(b, 'db')];
  throw new ConfigError(`${both} collide: ${subject} is ${what} (${a.file}): ${own}, apart from the files beside it`);
}

export type { AlertingConfig } from '../alerting/settings.ts';
export type { HttpAuthConfig } from '../api/settings.ts';
export type { ForwardConfig } from '../forward/settings.ts';
export { loadConfig, ConfigError, effectiveDocument, redact, restartRequired } from './load.ts';
export { parseDuration } from './values.ts';
export { SETTINGS, flagName, settingForFlag } from './schema.ts';
