/**
 * Ingest latency against a running hookwatch while dashboard clients query it: the question "does what the
 * dashboard asks slow down what Claude Code sends?". Ingest clients POST small Claude-Code-shaped protobuf batches
 * back to back and time each 200; query clients ask the HTTP API filtered questions that change every call (team,
 * range, hook), so no answer kept from an earlier call helps.
 */
import { batchTemplate, stamp } from './batch.ts';
import { agentFor, post } from './harness.ts';
import { percentile } from './result.ts';

export interface IngestUnderQueries {
  ingestP50Ms: number;
  ingestP99Ms: number;
  ingestBatches: number;
  ingestErrors: number;
  /** Queries answered (200) during the run, and their median and p95. */
  queries: number;
  queryErrors: number;
  queryP50Ms: number;
  queryP95Ms: number;
}

export interface QueryLoadOptions {
  otlpHttpUrl: string;
  httpUrl: string;
  seconds: number;
  ingestClients: number;
  /** 0: the same-run baseline, ingest alone. */
  queryClients: number;
  /** Records per OTLP request. */
  records: number;
  teams: number;
  /** Hook ids to ask per-hook questions about. */
  hookIds: readonly string[];
}

/** The URL of the i-th question of query client c: overview, hook list, breakdown, fleet chart in turn, each filtered differently. */
export function queryUrl(base: string, c: number, i: number, teams: number, hookIds: readonly string[]): string {
  const n = c * 7919 + i;
  const team = `team-${n % teams}`;
  // Ranges of 22 to 30 days ending now: different segments every few calls as well as different teams.
  const from = `now-${30 - (Math.floor(n / teams) % 9)}d`;
  const hook = hookIds[n % Math.max(1, hookIds.length)] ?? '';
  switch (i % 4) {
    case 0:
      return `${base}/api/v1/overview?from=${from}&team=${team}`;
    case 1:
      return `${base}/api/v1/hooks?from=${from}&team=${team}`;
    case 2:
      return `${base}/api/v1/hooks/${hook}/breakdown?from=${from}&dimension=user.id&team=${team}`;
    default:
      return `${base}/api/v1/fleet/series?from=${from}&team=${team}`;
  }
}

/** Runs ingest clients (and query clients) for `seconds`; timings of both. */
export async function ingestUnderQueries(o: QueryLoadOptions): Promise<IngestUnderQueries> {
  const template = batchTemplate(o.records, 'protobuf');
  const headers = { 'content-type': template.contentType };
  const agent = agentFor(o.ingestClients);
  const ingest: number[] = [];
  const queries: number[] = [];
  let ingestErrors = 0;
  let queryErrors = 0;
  let stop = false;
  // Warm-up: connections, JIT.
  await post(agent, `${o.otlpHttpUrl}/v1/logs`, stamp(template), headers);
  const queryClients = Array.from({ length: o.queryClients }, async (_, c) => {
    for (let i = 0; !stop; i++) {
      const t = performance.now();
      try {
        const res = await fetch(queryUrl(o.httpUrl, c, i, o.teams, o.hookIds));
        await res.arrayBuffer();
        if (res.status === 200) queries.push(performance.now() - t);
        else queryErrors++;
      } catch {
        queryErrors++;
      }
    }
  });
  // Let the query clients get going before timing ingest.
  if (o.queryClients > 0) await new Promise((resolve) => setTimeout(resolve, 500));
  const deadline = performance.now() + o.seconds * 1000;
  await Promise.all(Array.from({ length: o.ingestClients }, async () => {
    while (performance.now() < deadline) {
      try {
        const res = await post(agent, `${o.otlpHttpUrl}/v1/logs`, stamp(template), headers);
        if (res.status === 200) ingest.push(res.ms);
        else ingestErrors++;
      } catch {
        ingestErrors++;
      }
    }
  }));
  stop = true;
  await Promise.all(queryClients);
  agent.destroy();
  return {
    ingestP50Ms: percentile(ingest, 50), ingestP99Ms: percentile(ingest, 99), ingestBatches: ingest.length, ingestErrors,
    queries: queries.length, queryErrors, queryP50Ms: percentile(queries, 50), queryP95Ms: percentile(queries, 95),
  };
}
