/**
 * Silence matchers mean what they mean in Alertmanager (docs/alerting.md: "as in Alertmanager"): the same silence
 * body is posted to the real Alertmanager's v2 API (Debian's prometheus-alertmanager) and given to hookwatch,
 * and both must mute the same alerts and refuse the same patterns. Alertmanager reads the matchers with Go's
 * RE2, anchored at both ends; hookwatch with re2js.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSilence, silenceMatches } from './silences.ts';
import { eventually } from '../../test/helpers.ts';
import { hasAlertmanager, startAlertmanager, type RunningAlertmanager } from '../../test/support/alertmanager.ts';

interface Matcher { name: string; value: string; isRegex: boolean; isEqual: boolean }

const op = { '=': [false, true], '!=': [false, false], '=~': [true, true], '!~': [true, false] } as const;
const matcher = (name: string, o: keyof typeof op, value: string): Matcher => ({ name, value, isRegex: op[o][0], isEqual: op[o][1] });

/** [operator, pattern, the label's value (undefined: the alert has no such label), whether the silence mutes it]. */
const MUTES: [keyof typeof op, string, string | undefined, boolean][] = [
  ['=', 'SessionStart:startup', 'SessionStart:startup', true],
  ['=', 'SessionStart', 'SessionStart:startup', false],
  ['!=', 'SessionStart:startup', 'Stop', true],
  ['!=', 'x', undefined, true],
  ['=', 'x', undefined, false],
  ['=~', 'Session.*', 'SessionStart:startup', true],
  // Anchored at both ends: a match inside the value is not enough.
  ['=~', 'Start', 'SessionStart:startup', false],
  ['=~', 'foo|bar', 'foobar', false],
  ['=~', 'abc$', 'abc\n', false],
  ['!~', 'Session.*', 'Stop', true],
  ['!~', 'Session.*', 'SessionStart:x', false],
  ['!~', 'x+', undefined, true],
  // RE2: . stops at a newline unless (?s); \w and \d are ASCII, \pL is Unicode; case folding is Unicode.
  ['=~', 'a.c', 'a\nc', false],
  ['=~', '(?s)a.c', 'a\nc', true],
  ['=~', '\\w+', 'é', false],
  ['=~', '\\d', '٣', false],
  ['=~', '\\pL+', 'é中', true],
  ['=~', '(?i)ä', 'Ä', true],
  ['=~', '(?i)K', '\u212a', true],
  ['=~', '.', '😀', true],
  ['=~', '\\s', '\u000b', false],
  ['=~', '[[:alpha:]]+', 'abc', true],
  ['=~', '\\Qa.b\\E', 'a.b', true],
  ['=~', '\\Qa.b\\E', 'axb', false],
  ['=~', '(?m)^a$', 'a\nb', false],
  ['=~', 'a|', 'x', false],
];

/** [pattern, refused]: what RE2 refuses, hookwatch refuses (Perl-only syntax, bad escapes, repeats over 1000). */
const PATTERNS: [string, boolean][] = [
  ['a{1000}', false], ['a{1001}', true], ['(?P<n>x)', false], ['[[:word:]]', false], ['\\pN', false], ['\\p{Greek}', false],
  ['\\x41', false], ['\\A', false], ['a{,3}', false], ['(?s-i:a)', false],
  ['(a)\\1', true], ['(?=a)', true], ['(?#c)a', true], ['(?x) a', true], ['\\C', true], ['\\Z', true], ['\\G', true],
  ['\\e', true], ['\\cA', true], ['\\u0041', true], ['\\p{Foo}', true], ['[[:foo:]]', true], ['x**', true], ['a{2}{3}', true],
  ['[a-', true], ['(?', true], ['\\', true],
];

/**
 * [matchers, refused]: a silence is refused when each of its matchers is = or =~ and matches the empty string
 * (it would mute every alert); != and !~ never count as matching it, so a silence of them alone is taken.
 */
const MATCH_EMPTY: [Matcher[], boolean][] = [
  [[matcher('v', '=~', '.*')], true],
  [[matcher('v', '=', '')], true],
  [[matcher('v', '=', ''), matcher('w', '=~', 'b*')], true],
  [[matcher('v', '=~', '.+')], false],
  [[matcher('v', '=', ''), matcher('w', '=', 'b')], false],
  [[matcher('hook_name', '!=', 'SessionStart:startup')], false],
  [[matcher('alertname', '!~', 'persisted|headroom')], false],
  [[matcher('v', '!~', 'a+'), matcher('w', '=~', 'b*')], false],
];

describe.skipIf(!hasAlertmanager)('silence matchers against the real Alertmanager (skipped only outside CI without prometheus-alertmanager)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hookwatch-am-silences-'));
  let am: RunningAlertmanager;
  const now = Date.now();
  const window = { startsAt: new Date(now).toISOString(), endsAt: new Date(now + 3_600_000).toISOString() };
  const body = (matchers: Matcher[]): Record<string, unknown> => ({ matchers, ...window, createdBy: 'test', comment: 'compared with hookwatch' });
  /** Whether Alertmanager takes the silence (200), or refuses it (400). */
  const amTakes = async (matchers: Matcher[]): Promise<boolean> => {
    const res = await fetch(`${am.url}/api/v2/silences`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body(matchers)) });
    expect([200, 400], await res.text()).toContain(res.status);
    return res.status === 200;
  };
  const hookwatchTakes = (matchers: Matcher[]): boolean => {
    try {
      parseSilence(body(matchers), now);
      return true;
    } catch {
      return false;
    }
  };

  beforeAll(async () => {
    am = await startAlertmanager(dir, ['route:', '  receiver: none', 'receivers:', '  - name: none', ''].join('\n'));
  }, 30_000);

  afterAll(() => {
    am?.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  it('mute the same alerts: =, !=, =~, !~, regexes anchored and RE2, a missing label read as the empty string', async () => {
    const cases = MUTES.map(([o, pattern, value, mutes], i) => ({
      what: `v${o}${JSON.stringify(pattern)} on ${value === undefined ? 'no v' : JSON.stringify(value)}`,
      labels: { alertname: `case_${i}`, ...(value === undefined ? {} : { v: value }) },
      matchers: [matcher('alertname', '=', `case_${i}`), matcher('v', o, pattern)],
      mutes,
    }));
    for (const c of cases) expect(await amTakes(c.matchers), c.what).toBe(true);
    const posted = await fetch(`${am.url}/api/v2/alerts`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify(cases.map((c) => ({ labels: c.labels, ...window }))),
    });
    expect(posted.status).toBe(200);
    const listed = await eventually('every alert listed by alertmanager', async () => {
      const alerts = (await (await fetch(`${am.url}/api/v2/alerts`)).json()) as { labels: Record<string, string>; status: { silencedBy: string[] } }[];
      return alerts.length === cases.length ? alerts : undefined;
    }, 15_000);
    const expected = Object.fromEntries(cases.map((c) => [c.what, c.mutes]));
    const byAlertmanager = Object.fromEntries(cases.map((c) => [c.what, (listed.find((a) => a.labels['alertname'] === c.labels.alertname)?.status.silencedBy.length ?? 0) > 0]));
    const byHookwatch = Object.fromEntries(cases.map((c) => [c.what, silenceMatches(parseSilence(body(c.matchers), now), c.labels)]));
    expect(byAlertmanager).toEqual(expected);
    expect(byHookwatch).toEqual(expected);
  }, 30_000);

  it('refuse the same patterns', async () => {
    const refused = async (takes: (m: Matcher[]) => boolean | Promise<boolean>): Promise<Record<string, boolean>> => {
      const out: Record<string, boolean> = {};
      for (const [pattern] of PATTERNS) out[pattern] = !(await takes([matcher('alertname', '=', 'x'), matcher('v', '=~', pattern)]));
      return out;
    };
    const expected = Object.fromEntries(PATTERNS);
    expect(await refused(amTakes)).toEqual(expected);
    expect(await refused(hookwatchTakes)).toEqual(expected);
  });

  it('refuse a silence whose matchers are all = or =~ matching the empty string, and take one of != or !~ alone', async () => {
    const expected = MATCH_EMPTY.map(([, refused]) => refused);
    expect(await Promise.all(MATCH_EMPTY.map(async ([m]) => !(await amTakes(m))))).toEqual(expected);
    expect(MATCH_EMPTY.map(([m]) => !hookwatchTakes(m))).toEqual(expected);
  });
});
