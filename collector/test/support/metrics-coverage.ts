/**
 * What docs/deploy.md's metrics table lists, and a hookwatch whose /metrics shows every family it can export:
 * forwarding to a local downstream, a webhook and an Alertmanager receiver on a local sink.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startTestService, type TestService } from '../helpers.ts';
import { WebhookSink } from './alerting.ts';
import { HttpDownstream } from './downstream-recorder.ts';

export const DEPLOY_DOC = fileURLToPath(new URL('../../../docs/deploy.md', import.meta.url));

/**
 * The metric names of docs/deploy.md's metrics table, as written there: a name starting with `_` continues the
 * `hookwatch_<part>` of the name before it (`hookwatch_forward_queue_depth`, `_queue_bytes`), and `*` stays a
 * wildcard (`process_*`). Throws when the table is not there.
 */
export function documentedMetrics(md = readFileSync(DEPLOY_DOC, 'utf8')): string[] {
  const start = md.indexOf('| Metric | Type | What it says |');
  if (start < 0) throw new Error('docs/deploy.md has no metrics table (| Metric | Type | What it says |)');
  const out: string[] = [];
  for (const line of md.slice(start).split('\n').slice(2)) {
    if (!line.startsWith('|')) break;
    let prefix = '';
    for (const m of (line.split('|')[1] ?? '').matchAll(/`([a-z_*:]+)(?:\{[^}]*\})?`/g)) {
      const name = m[1] as string;
      if (name.startsWith('_')) out.push(`${prefix}${name}`);
      else {
        prefix = name.split('_').slice(0, 2).join('_');
        out.push(name);
      }
    }
  }
  return out;
}

/** Whether a documented name (`*` a wildcard) names the metric `name`. */
export function documentedAs(documented: string, name: string): boolean {
  return new RegExp(`^${documented.replace(/\*/g, '[a-z0-9_]*')}$`).test(name);
}

/**
 * Words of the form `hookwatch_...` in hookwatch's pages that are not metrics: PostgreSQL's signal channels
 * (`NOTIFY hookwatch_ingest`), the receiver test's alert name, and the database name of a restore example.
 */
export const NOT_METRICS = ['hookwatch_ingest', 'hookwatch_lease', 'hookwatch_silences', 'hookwatch_test', 'hookwatch_restored'];

/**
 * The metric names `text` mentions that docs/deploy.md's table (`documented`) does not list. A histogram's
 * `_bucket`, `_sum` and `_count` series count as its family; `*` in a mention is a wildcard, as in the table.
 */
export function undocumentedMetrics(text: string, documented: readonly string[]): string[] {
  const mentioned = new Set([...text.matchAll(/\bhookwatch_[a-z0-9_*]*[a-z0-9*]/g)].map((m) => m[0]).filter((n) => !NOT_METRICS.includes(n)));
  const listed = (name: string): boolean => documented.some((d) => d === name || documentedAs(d, name) || documentedAs(name, d));
  return [...mentioned].filter((n) => !listed(n) && !listed(n.replace(/_(bucket|sum|count)$/, '')));
}

export interface FullyConfiguredService {
  service: TestService;
  downstream: HttpDownstream;
  sink: WebhookSink;
  close(): Promise<void>;
}

/** A hookwatch with its optional parts on, each talking to a loopback server that accepts everything. */
export async function startFullyConfiguredService(): Promise<FullyConfiguredService> {
  const downstream = new HttpDownstream();
  const forwardUrl = await downstream.start();
  const sink = new WebhookSink();
  await sink.start();
  const yaml = [
    'alerting:',
    '  externalUrl: http://hookwatch.test',
    '  receivers:',
    `    - { name: ops, url: ${sink.url}/hooks }`,
    `    - { name: am, type: alertmanager, url: ${sink.url}/ }`,
    '',
  ].join('\n');
  const service = await startTestService({ HOOKWATCH_FORWARD_ENDPOINT: forwardUrl, HOOKWATCH_FORWARD_COMPRESSION: 'none' }, { yaml });
  return {
    service, downstream, sink,
    close: async () => {
      await service.close();
      await downstream.stop();
      await sink.close();
    },
  };
}
