/**
 * The real Alertmanager (Debian's prometheus-alertmanager) on loopback, for tests that check hookwatch against
 * it: its v2 API answers at `url`, with no cluster peer.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { requireTool, runs } from '../required-tool.ts';
// Alertmanager cannot listen on port 0 and report the port it got: it gets one that was free a moment ago.
import { freePort } from './free-port.ts';
import { until } from '../helpers.ts';

export const ALERTMANAGER = 'prometheus-alertmanager';
/** Whether Alertmanager runs here; under CI=true a missing one fails the test file. */
export const hasAlertmanager = requireTool(runs(ALERTMANAGER, ['--version']), ALERTMANAGER, 'apt-get install prometheus-alertmanager (.ci/run does)');

export interface RunningAlertmanager {
  url: string;
  /** Sends SIGTERM. */
  kill(): void;
}

/** Starts Alertmanager with `config` (its YAML) under `dir` and resolves once /-/ready answers 200. */
export async function startAlertmanager(dir: string, config: string): Promise<RunningAlertmanager> {
  const port = await freePort();
  writeFileSync(join(dir, 'alertmanager.yml'), config);
  const child = spawn(ALERTMANAGER, [
    `--config.file=${join(dir, 'alertmanager.yml')}`,
    `--storage.path=${join(dir, 'am')}`,
    `--web.listen-address=127.0.0.1:${port}`,
    '--cluster.listen-address=',
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  // The end of its log, for a start that fails.
  let log = '';
  child.stderr.on('data', (c: Buffer) => {
    log = (log + c.toString('utf8')).slice(-4000);
  });
  const url = `http://127.0.0.1:${port}`;
  const am: RunningAlertmanager = { url, kill: () => child.kill('SIGTERM') };
  try {
    await until(`alertmanager to be ready (${url})`, async () => (await fetch(`${url}/-/ready`).catch(() => undefined))?.status === 200, 15_000);
  } catch (err) {
    am.kill();
    throw new Error(`${String(err)}\n${log}`, { cause: err });
  }
  return am;
}
