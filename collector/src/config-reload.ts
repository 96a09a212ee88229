/**
 * Reloading the configuration of a running hookwatch, as Prometheus and Alertmanager do (SIGHUP, POST /-/reload):
 * the file, environment and flags are read again as at start and checked whole first (an empty file, all defaults
 * at start, is refused: most likely one cut short while it is written). An invalid configuration changes nothing:
 * the running one is kept, one error names the problem, and the reload reports it. A valid one is applied at once
 * to what can change while running, the alerting rules, receivers, intervals and delivery settings, the near
 * threshold outputs received from then on are classified by (stored executions keep their status), and the log
 * level (the settings marked reloadable); every other setting that changed (listen addresses, the database, TLS
 * files, ...) is named as needing a restart, and keeps its running value until then.
 */
import { ConfigError, restartRequired, type HookwatchConfig } from './config/index.ts';
import type { LoadedConfig } from './config/load.ts';
import type { Alerting } from './alerting/index.ts';
import { defaultRulesOffWarning } from './alerting/settings.ts';
import type { HookIngest } from './pipeline/hook-ingest.ts';
import { dimensionNames } from './pipeline/settings.ts';
import type { Logger } from './telemetry/logger.ts';
import type { MetricsRegistry } from './telemetry/metrics.ts';

/** Where the service's configuration came from, to read it again. */
export interface ConfigSource {
  /** The settings the service started with, as loaded. */
  loaded: LoadedConfig;
  /** Reads the file, environment and flags again, as at start; throws ConfigError naming the problem. */
  load(): { loaded: LoadedConfig; config: HookwatchConfig };
}

/** What a reload applied. */
export interface ReloadResult {
  /** Settings that changed but keep their running value until the next restart (names only). */
  restartRequired: string[];
}

/** No source to read again: the service was started from a configuration built in code. */
export class ReloadUnavailableError extends Error {
  override name = 'ReloadUnavailableError';
}

/** The service is stopping: a reload would open TLS files and reconfigure what is being stopped. */
export class ReloadStoppingError extends Error {
  override name = 'ReloadStoppingError';
}

export interface ConfigReloaderOptions {
  source: ConfigSource | undefined;
  /** The configuration the service started with. */
  running: HookwatchConfig;
  alerting: Pick<Alerting, 'reconfigure'>;
  ingest: Pick<HookIngest, 'setNearThreshold'>;
  logger: Logger;
  metrics: MetricsRegistry;
  now: () => number;
}

export class ConfigReloader {
  private readonly opts: ConfigReloaderOptions;
  private chain: Promise<unknown> = Promise.resolve();
  private stopping = false;
  private readonly successful;
  private readonly successAt;

  constructor(opts: ConfigReloaderOptions) {
    this.opts = opts;
    // As Prometheus: the configuration loaded at start counts as the first successful load.
    this.successful = opts.metrics.gauge({ name: 'hookwatch_config_last_reload_successful', help: 'Whether the last configuration reload attempt was successful (1) or not (0); 1 at start.' });
    this.successAt = opts.metrics.gauge({ name: 'hookwatch_config_last_reload_success_timestamp_seconds', help: 'Time of the last successful configuration load (the start, or a reload), in seconds since the epoch.' });
    this.successful.set(1);
    this.successAt.set(opts.now() / 1000);
  }

  /**
   * Reads the configuration again and applies it (one reload at a time). Rejects with ConfigError when it is
   * invalid (nothing changed), ReloadUnavailableError when there is nothing to read again, or ReloadStoppingError
   * once the service has begun to stop.
   */
  reload(): Promise<ReloadResult> {
    const run = this.chain.then(() => this.reloadOnce());
    this.chain = run.catch(() => {});
    return run;
  }

  /** The service has begun to stop: every reload from now on is refused, one waiting for the reload in progress too. */
  stop(): void {
    this.stopping = true;
  }

  private async reloadOnce(): Promise<ReloadResult> {
    const { source, logger } = this.opts;
    // Not a failed reload: the configuration is neither read nor judged, and the last reload's outcome stands.
    if (this.stopping) throw new ReloadStoppingError('hookwatch is stopping; the configuration is not reloaded');
    if (!source) throw new ReloadUnavailableError('this hookwatch was not started from a configuration file, environment and flags it can read again');
    let result: ReloadResult;
    try {
      const next = source.load();
      const restart = restartRequired(source.loaded, next.loaded);
      if (restart.includes('dimensions')) this.checkRuleDimensions(next.config);
      // Applied at once. The answer does not wait for the evaluation the reload queues (behind one in progress,
      // which reads every hook): as Prometheus' answers once the new rules are in place, before they are evaluated.
      void this.opts.alerting.reconfigure(next.config.alerting);
      // Last, once nothing can refuse the reload: a refused one keeps the running threshold and level too.
      this.opts.ingest.setNearThreshold(next.config.delivery.nearThreshold);
      logger.setLevel?.(next.config.log.level);
      result = { restartRequired: restart };
      // As at start: a rule list the reload brought in may have turned default rules off.
      const rulesOff = defaultRulesOffWarning(next.config.alerting.rules);
      if (rulesOff) logger.warn(rulesOff);
    } catch (err) {
      this.successful.set(0);
      // A ConfigError names the setting and never its secret value; anything else is logged as an error.
      logger.error('configuration reload failed; the running configuration is kept', err instanceof ConfigError ? { problem: err.message } : { err });
      throw err;
    }
    this.successful.set(1);
    this.successAt.set(this.opts.now() / 1000);
    if (result.restartRequired.length > 0) logger.warn('configuration reloaded; these changed settings keep their running value until hookwatch restarts', { settings: result.restartRequired });
    else logger.info('configuration reloaded');
    return result;
  }

  /** A rule grouping by a dimension the running ingest does not record (dimensions takes a restart) is refused. */
  private checkRuleDimensions(next: HookwatchConfig): void {
    const recorded = dimensionNames(this.opts.running.dimensions);
    next.alerting.rules.forEach((rule, i) => {
      if (rule.groupBy !== null && !recorded.includes(rule.groupBy)) {
        throw new ConfigError(`alerting.rules[${i}].groupBy: dimension ${JSON.stringify(rule.groupBy)} is not recorded until hookwatch restarts with the new dimensions`);
      }
    });
  }
}
