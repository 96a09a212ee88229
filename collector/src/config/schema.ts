/**
 * The configuration schema: one table that drives parsing (file, environment, flags), validation, redaction
 * and the generated reference in docs/configuration.md. Each stage owns its rows, defaults and checks in its
 * `settings.ts`; this file only puts the stages' lists together, in the order the reference and
 * `hookwatch config` show them. A new setting is a row in its stage's list, not here.
 */
import { ALERTING_SETTINGS } from '../alerting/settings.ts';
import { API_SETTINGS } from '../api/settings.ts';
import { CLI_SETTINGS } from '../cli/settings.ts';
import { FORWARD_SETTINGS } from '../forward/settings.ts';
import { PIPELINE_SETTINGS } from '../pipeline/settings.ts';
import { PRIVACY_SETTINGS } from '../privacy/settings.ts';
import { RECEIVER_SETTINGS } from '../receiver/settings.ts';
import { STORE_SETTINGS } from '../store/settings.ts';
import { TELEMETRY_SETTINGS } from '../telemetry/settings.ts';
import type { Setting } from './setting.ts';

export type { Setting, ValueType } from './setting.ts';
export { redactUrlPassword } from './values.ts';

export const SETTINGS: readonly Setting[] = [
  ...RECEIVER_SETTINGS,
  ...API_SETTINGS,
  ...STORE_SETTINGS,
  ...PIPELINE_SETTINGS,
  ...PRIVACY_SETTINGS,
  ...FORWARD_SETTINGS,
  ...TELEMETRY_SETTINGS,
  ...CLI_SETTINGS,
  ...ALERTING_SETTINGS,
];

export function findSetting(key: string): Setting | undefined {
  return SETTINGS.find((s) => s.key === key);
}

/** `otlp.http.addr` -> `--otlp-http-addr`; camelCase parts become kebab-case. */
export function flagName(key: string): string {
  return '--' + key.replace(/\./g, '-').replace(/[A-Z]/g, (c) => '-' + c.toLowerCase());
}

/** The setting a command-line flag (`name` without its dashes) sets, or undefined; file-only settings have none. */
export function settingForFlag(name: string): Setting | undefined {
  return SETTINGS.find((s) => flagName(s.key) === `--${name}` && s.type !== 'object');
}
