/**
 * The hook stage's settings: when an output counts as near the cap (`delivery.nearThreshold`) and which extra
 * attributes are kept per event (`dimensions`). A leaf: config/ composes these rows, and hands the dimensions
 * to the stages whose settings are checked against them (privacy, alert rules).
 */
import type { Setting, SettingValues } from '../config/setting.ts';
import { BUILTIN_DIMENSIONS } from '../hooks/model.ts';

export const PIPELINE_SETTINGS: readonly Setting[] = [
  {
    key: 'delivery.nearThreshold', env: 'HOOKWATCH_NEAR_THRESHOLD', type: 'int', default: 8000, min: 1, max: 10_000, reloadable: true,
    description: 'An output whose largest string may exceed this many characters (with nothing persisted) is "near" the 10,000 cap. A reload applies a changed value to executions received from then on; those already stored keep the status they were given.',
  },
  {
    key: 'dimensions', env: 'HOOKWATCH_DIMENSIONS', type: 'list', default: ['team'],
    description: 'Extra event or resource attribute keys kept per event and usable as filters (e.g. `team` from OTEL_RESOURCE_ATTRIBUTES). Comma-separated in the environment.',
  },
];

export interface PipelineSettings {
  delivery: { nearThreshold: number };
  dimensions: string[];
}

export function pipelineConfig(r: SettingValues): PipelineSettings {
  return { delivery: { nearThreshold: r.number('delivery.nearThreshold') }, dimensions: r.list('dimensions') };
}

/** Every dimension name a filter or an alert rule's groupBy may use: the built-in ones and the configured ones. */
export function dimensionNames(dimensions: readonly string[]): string[] {
  return [...Object.keys(BUILTIN_DIMENSIONS), ...dimensions];
}
