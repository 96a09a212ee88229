/**
 * The typed configuration the rest of hookwatch sees, built once at start from the loaded settings. Each stage
 * reads and checks its own part (its `settings.ts`); this file only hands every stage the loaded values, and
 * passes the configured dimensions to the stages whose settings are checked against them.
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
import type { LoadedConfig } from './load.ts';
import { SettingReader } from './setting-reader.ts';

export type HookwatchConfig = ReceiverSettings & ApiSettings & StoreSettings & PipelineSettings & { privacy: PrivacyConfig } & { forward: ForwardConfig } & TelemetrySettings & CliSettings & { alerting: AlertingConfig };

export function toConfig(loaded: LoadedConfig): HookwatchConfig {
  const r = new SettingReader(loaded.values, loaded.sources);
  const pipeline = pipelineConfig(r);
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

export type { AlertingConfig } from '../alerting/settings.ts';
export type { HttpAuthConfig } from '../api/settings.ts';
export type { ForwardConfig } from '../forward/settings.ts';
export { loadConfig, ConfigError, effectiveDocument, redact } from './load.ts';
export { parseDuration } from './values.ts';
export { SETTINGS, flagName, settingForFlag } from './schema.ts';
