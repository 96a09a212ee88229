/**
 * The API's state-changing routes (silences, receiver tests) cannot be driven by a web page a team member
 * happens to visit: browsers send cross-site "simple" POSTs (text/plain, no preflight) with an Origin header,
 * and hookwatch refuses them with 403. Clients that are not browsers (curl, scripts) send no Origin and work.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers.ts';

let service: TestService;

beforeAll(async () => {
  service = await startTestService();
});

afterAll(async () => {
  await service.close();
});

const silence = (): string => JSON.stringify({
  matchers: [{ name: 'hook_name', value: 'PostToolUse:Bash' }],
  endsAt: new Date(Date.now() + 3_600_000).toISOString(),
  createdBy: 'someone',
  comment: 'muted',
});

async function silences(): Promise<number> {
  const res = await fetch(`${service.httpUrl}/api/v1/silences`);
  return ((await res.json()) as { silences: unknown[] }).silences.length;
}

describe('cross-site writes', () => {
  it('a cross-site text/plain POST that would mute alerts gets 403 and creates nothing', async () => {
    const before = await silences();
    const crossSite: Record<string, string>[] = [
      { 'content-type': 'text/plain', origin: 'https://evil.example' },
      { 'content-type': 'text/plain', origin: 'null' },
      { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'cross-site' },
    ];
    for (const headers of crossSite) {
      const res = await fetch(`${service.httpUrl}/api/v1/silences`, { method: 'POST', headers, body: silence() });
      expect(res.status, JSON.stringify(headers)).toBe(403);
    }
    const test = await fetch(`${service.httpUrl}/api/v1/receivers/any/test`, { method: 'POST', headers: { origin: 'https://evil.example' } });
    expect(test.status).toBe(403);
    expect(await silences()).toBe(before);
  });

  it('the dashboard itself (same origin) and clients without Origin can still write', async () => {
    const before = await silences();
    const sameOrigin = await fetch(`${service.httpUrl}/api/v1/silences`, { method: 'POST', headers: { 'content-type': 'application/json', origin: service.httpUrl, 'sec-fetch-site': 'same-origin' }, body: silence() });
    expect(sameOrigin.status).toBe(201);
    const script = await fetch(`${service.httpUrl}/api/v1/silences`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: silence() });
    expect(script.status).toBe(201);
    expect(await silences()).toBe(before + 2);
    // Reads are not affected.
    expect((await fetch(`${service.httpUrl}/api/v1/hooks`, { headers: { origin: 'https://evil.example' } })).status).toBe(200);
  });
});
