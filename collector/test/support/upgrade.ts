/**
 * What the upgrade tests of both stores share: the real Claude Code captures sent as if just now, the config
 * they run with (alerts to a webhook), and every view of the API over a range, to compare before and after.
 */
import { expect } from 'vitest';
import { fixtureRequests, getJson, withoutBucketEnds } from '../helpers.ts';

/** The JSON captures (run1, run5) with their times moved to `nowMs`, as if Claude Code had just sent them. */
export function capturesNow(nowMs: number): { path: string; body: string }[] {
  return ['run1-httpjson', 'run5-mockapi-tools-httpjson'].flatMap((run) => {
    const requests = fixtureRequests(run);
    const first = BigInt(/"timeUnixNano":"(\d+)"/.exec(requests[0]!.body.toString())![1]!);
    const shift = BigInt(nowMs) * 1_000_000n - first;
    return requests.map((r) => ({
      path: r.path,
      body: r.body.toString()
        .replace(/"(timeUnixNano|observedTimeUnixNano|startTimeUnixNano)":"(\d+)"/g, (_, k: string, v: string) => `"${k}":"${BigInt(v) + shift}"`)
        .replace(/"event\.timestamp","value":\{"stringValue":"([^"]+)"/g, (_, v: string) => `"event.timestamp","value":{"stringValue":"${new Date(Date.parse(v) + Number(shift / 1_000_000n)).toISOString()}"`),
    }));
  });
}

/** The config both versions run with: persisted outputs alert within an hour, to a signed webhook at `sinkUrl`. */
export function upgradeConfigYaml(sinkUrl: string): string {
  return `alerting:
  evaluationInterval: 100ms
  rules:
    - { kind: persisted, window: 1h }
  receivers:
    - { name: oncall, type: webhook, url: ${sinkUrl}/hooks, signingSecret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw }
`;
}

/** The silence kept across the upgrade: PostToolUse:Bash, for a day from `nowMs`. */
export async function silenceBash(base: string, nowMs: number): Promise<number> {
  const res = await fetch(`${base}/api/v1/silences`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ matchers: [{ name: 'hook_name', value: 'PostToolUse:Bash' }], endsAt: new Date(nowMs + 86_400_000).toISOString(), createdBy: 'ops', comment: 'known' }),
  });
  return res.status;
}

/** Every view over a fixed range, as the dashboard and scripts read them. */
export async function views(base: string, range: string): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  const read = async (name: string, path: string): Promise<unknown> => {
    const { status, body } = await getJson(base, path);
    expect(status, path).toBe(200);
    out[name] = body;
    return body;
  };
  const { hooks } = (await read('hooks', `/api/v1/hooks?${range}`)) as { hooks: { id: string; hookName: string }[] };
  // The range runs past now: what each bucket counts is compared, not where the one still filling ends.
  for (const h of hooks) {
    withoutBucketEnds(await read(`series ${h.hookName}`, `/api/v1/hooks/${h.id}/series?${range}&step=1h`));
    for (const d of ['service.version', 'session.id', 'terminal.type']) await read(`breakdown ${h.hookName} ${d}`, `/api/v1/hooks/${h.id}/breakdown?dimension=${d}&${range}`);
  }
  await read('filtered', `/api/v1/hooks?${range}&service.version=2.1.332&terminal.type=xterm`);
  const overview = (await read('overview', `/api/v1/overview?${range}`)) as { otlpHttpPort?: unknown };
  delete overview.otlpHttpPort;
  withoutBucketEnds(await read('fleet', `/api/v1/fleet/series?${range}&step=1h`));
  await read('silences', '/api/v1/silences');
  const { alerts } = (await getJson<{ alerts: Record<string, unknown>[] }>(base, '/api/v1/alerts')).body;
  out['alerts'] = alerts.map((a) => ({ id: a['id'], state: a['state'], labels: a['labels'], startsAt: a['startsAt'], lastNotifiedAt: a['lastNotifiedAt'], silencedBy: a['silencedBy'] }));
  return out;
}

/** hookwatch_alert_evaluations_total of the hookwatch at `base` (NaN when it has none). */
export async function evaluations(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  return Number(/^hookwatch_alert_evaluations_total (\d+)/m.exec(text)?.[1] ?? NaN);
}
