/**
 * Privacy by default: real Claude Code captures, with the identity attributes a logged-in account adds
 * (user.email, user.account_uuid, organization.id), ingested by the real CLI. Afterwards no file hookwatch wrote
 * holds the cleartext, breakdowns and filters by user.email still work (on digests, and a cleartext filter is
 * digested the same way), dropped attributes are gone, and every file is readable by hookwatch's user only.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { BreakdownResponse, FleetSeriesResponse, HooksResponse } from '../../../shared/src/api.ts';
import { fixtureRequests } from '../helpers.ts';
import { cliPerTest } from './cli-child.ts';

const startCli = cliPerTest();

const PEOPLE = [
  { email: 'alice.cleartext@example.com', account: '0b6c3a52-5d6e-4f7a-9f7e-a11ce0000001', org: 'org-secret-7f3e91' },
  { email: 'bob.cleartext@example.com', account: '0b6c3a52-5d6e-4f7a-9f7e-b0b000000002', org: 'org-secret-7f3e91' },
];

/**
 * A captured OTLP/JSON request as another person's session would send it: their identity added to every log
 * record, as Claude Code adds it for a logged-in account, and their own session id.
 */
function withIdentity(body: Buffer, who: (typeof PEOPLE)[number]): string {
  const doc = JSON.parse(body.toString('utf8')) as { resourceLogs: { scopeLogs: { logRecords: { attributes: { key: string; value: { stringValue?: string } }[] }[] }[] }[] };
  for (const rl of doc.resourceLogs) {
    for (const sl of rl.scopeLogs) {
      for (const r of sl.logRecords) {
        for (const a of r.attributes) if (a.key === 'session.id') a.value = { stringValue: `${a.value.stringValue ?? ''}-${who.account.slice(-1)}` };
        r.attributes.push(
          { key: 'user.email', value: { stringValue: who.email } },
          { key: 'user.account_uuid', value: { stringValue: who.account } },
          { key: 'organization.id', value: { stringValue: who.org } },
        );
      }
    }
  }
  return JSON.stringify(doc);
}

/** The captures were made on 2026-11-30; an absolute range keeps the test independent of the clock. */
const RANGE = 'from=2026-11-01T00:00:00Z&to=2027-01-01T00:00:00Z';

/** Every file under `dir`, recursively. */
function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)]));
}

describe('privacy', () => {
  it('no cleartext email reaches disk, breakdown by user.email still groups, dropped attributes are gone, files are 0600', async () => {
    const cli = await startCli((dir) => ({
      HOOKWATCH_DB: join(dir, 'data', 'hookwatch.db'),
      HOOKWATCH_FORWARD_QUEUE_PATH: join(dir, 'data', 'forward-queue.db'),
      HOOKWATCH_PRIVACY_DROP: 'user.account_uuid,organization.id',
    }));
    const data = join(cli.dir, 'data');
    // Both people's sessions send run1's captures (one SessionStart:startup execution each).
    const logs = fixtureRequests('run1-httpjson').filter((r) => r.path === '/v1/logs');
    for (const who of PEOPLE) {
      for (const req of logs) {
        const res = await fetch(`${cli.otlpHttp}/v1/logs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: withIdentity(req.body, who) });
        expect(res.status).toBe(200);
      }
    }

    const hooks = (await (await fetch(`${cli.http}/api/v1/hooks?${RANGE}`)).json()) as HooksResponse;
    const start = hooks.hooks.find((h) => h.hookName === 'SessionStart:startup');
    expect(start?.executions).toBe(2);
    const id = encodeURIComponent(start?.id ?? '');
    const breakdown = (await (await fetch(`${cli.http}/api/v1/hooks/${id}/breakdown?dimension=user.email&${RANGE}`)).json()) as BreakdownResponse;
    expect(breakdown.rows).toHaveLength(2);
    for (const row of breakdown.rows) {
      expect(row.value).toMatch(/^hmac:[0-9a-f]{32}$/);
      expect(row.executions).toBe(1);
    }
    // A filter given in cleartext finds that person's executions (digested as stored); another address finds none.
    const alice = (await (await fetch(`${cli.http}/api/v1/hooks?${RANGE}&user.email=${encodeURIComponent(PEOPLE[0]?.email ?? '')}`)).json()) as HooksResponse;
    expect(alice.hooks.find((h) => h.hookName === 'SessionStart:startup')?.executions).toBe(1);
    const nobody = (await (await fetch(`${cli.http}/api/v1/hooks?${RANGE}&user.email=carol@example.com`)).json()) as HooksResponse;
    expect(nobody.hooks.find((h) => h.hookName === 'SessionStart:startup')).toBeUndefined();
    // The overview's fleet chart and sparklines take the same cleartext filter.
    const aliceFleet = (await (await fetch(`${cli.http}/api/v1/fleet/series?${RANGE}&user.email=${encodeURIComponent(PEOPLE[0]?.email ?? '')}`)).json()) as FleetSeriesResponse;
    expect(aliceFleet.hooks.find((h) => h.hookName === 'SessionStart:startup')?.executions.reduce((a, b) => a + b, 0)).toBe(1);
    // Dropped: nothing to group by.
    const org = (await (await fetch(`${cli.http}/api/v1/hooks/${id}/breakdown?dimension=organization.id&${RANGE}`)).json()) as BreakdownResponse;
    expect(org.rows.map((r) => r.value)).toEqual(['']);

    await cli.stop();
    const written = files(data);
    expect(written.map((f) => f.slice(data.length + 1))).toEqual(expect.arrayContaining(['hookwatch.db']));
    for (const f of written) {
      const bytes = readFileSync(f);
      for (const p of PEOPLE) {
        for (const secret of [p.email, p.account, p.org]) {
          expect(bytes.includes(Buffer.from(secret)), `${f} holds ${secret}`).toBe(false);
          expect(bytes.includes(Buffer.from(secret, 'utf16le')), `${f} holds ${secret} (UTF-16)`).toBe(false);
        }
      }
      expect((statSync(f).mode & 0o777).toString(8), `mode of ${f}`).toBe('600');
    }
    expect((statSync(data).mode & 0o777).toString(8), 'mode of the data folder').toBe('700');
  }, 60_000);
});
