/**
 * The typed configuration the rest of hookwatch sees, built once at start from the loaded settings. Each stage
 * reads and checks its own part (its `settings.ts`); this file only hands every stage the loaded values, and
 * passes the configured dimensions to the stages whose settings are checked against them. One check spans
 * stages: the three listeners (two of the receivers, one of the API) never ask for one port.
 */
import { alertingConfig, type AlertingConfig } from '../alerting/settings.ts';
import { apiConfig, type ApiSettings } from '../api/settings.ts';
import { cliConfig, type CliSettings } from '../cli/settings.ts';
import { forwardConfig, type ForwardConfig } from '../forward/settings.ts';
import { dimensionNames, pipelineConfig, type PipelineSettings } from '../pipeline/settings.ts';
import { privacyConfig, type PrivacyConfig } from '../privacy/settings.ts';
import { receiverConfig, type ReceiverSettings } from '../receiver/settings.ts';
import { storeConfig, type StoreSettings } from '../store/settings.ts';
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
    ...[config.db, config.forward.endpoint, config.alerting.otlp.endpoint].flatMap(urlPasswords),
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

export type { AlertingConfig } from '../alerting/settings.ts';
export type { HttpAuthConfig } from '../api/settings.ts';
export type { ForwardConfig } from '../forward/settings.ts';
export { loadConfig, ConfigError, effectiveDocument, redact, restartRequired } from './load.ts';
export { parseDuration } from './values.ts';
export { SETTINGS, flagName, settingForFlag } from './schema.ts';
