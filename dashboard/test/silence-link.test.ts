/**
 * From a notification to a silence, as an on-call engineer goes: a real hookwatch notifies a webhook receiver and
 * a Slack receiver of a persisted alert; the silence link each carries opens the alerts page in headless Chromium
 * with the silence form prefilled with the alert's labels; confirming it silences the alert, and its repeat is
 * not sent. The form stays, as filled in, through range and state filter changes until the silence is made or the
 * form closed (opened again after another page, it starts afresh), and its matchers can be unchecked to widen it. A feed alert's link, and its card on the alerts page,
 * open the overview around the feed's last event.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Locator } from 'playwright-core';
import { alertRange } from '../../shared/src/alert-range.ts';
import { silenceQuery } from '../../shared/src/silence-link.ts';
import type { AlertSummary, AlertsResponse, Silence } from '../../shared/src/api.ts';
import type { AlertmanagerWebhookBody } from '../../collector/src/notify/alertmanager.ts';
import { eventually, getJson, postOtlp, startTestService, until, type TestService } from '../../collector/test/helpers.ts';
import { FakeClock, WebhookSink } from '../../collector/test/support/alerting.ts';
import { closePages, launch, screenshot, waitLoaded, watchedPage, type WatchedPage } from './harness.ts';
import { hookRequest } from './otlp-json.ts';

const MIN = 60_000;
// A hook name as Claude Code writes a matcher: a `|` would end a Slack link's URL were it not encoded.
const HOOK = 'PreToolUse:Write|Edit';

let browser: Browser;
let svc: TestService;
// hookwatch's clock starts at the browser's; the tests move it on, to when the alert's repeat is due and the feed
// is quiet, hours ahead of the browser's.
const clock = new FakeClock(Date.now());
const webhook = new WebhookSink(clock.now);
const slack = new WebhookSink(clock.now);
const open: WatchedPage[] = [];
/** When the hook's one execution happened: the feed's last event. */
const eventAt = clock.now() - MIN;

/**
 * Fills in a silence form (its duration left at the first, an hour) and confirms it: the silence made, or the
 * form's answer when none was.
 */
async function silenceWith(form: Locator, reason: string): Promise<Silence> {
  await form.locator('input[aria-label="Reason"]').fill(reason);
  await form.locator('input[aria-label="Your name"]').fill('platform on-call');
  await form.locator('button[type="submit"]').click();
  const result = form.locator('.silence-result', { hasText: /Silenced until|Could not/ });
  await result.waitFor();
  const [made] = await silencesFor(reason);
  if (!made) throw new Error(`no silence made: ${await result.textContent()}`);
  return made;
}

async function page(): Promise<WatchedPage> {
  const w = await watchedPage(browser);
  open.push(w);
  return w;
}

/** The silence link of the persisted alert's first notification. */
function silenceUrl(): string {
  const link = webhook.bodies<AlertmanagerWebhookBody>()[0]?.alerts[0]?.annotations['silence_url'];
  if (!link) throw new Error('no silence link notified');
  return link;
}

/** The quiet feed's alert, as the alerts API lists it once it fires. */
function feedAlert(): Promise<AlertSummary> {
  return eventually('the feed alert listed', async () =>
    (await getJson<AlertsResponse>(svc.httpUrl, '/api/v1/alerts')).body.alerts.find((a) => a.labels['scope'] === 'feed' && a.state === 'firing'));
}

/** The silences made with this reason (expired ones too). */
async function silencesFor(comment: string): Promise<Silence[]> {
  return (await getJson<{ silences: Silence[] }>(svc.httpUrl, '/api/v1/silences')).body.silences.filter((s) => s.comment === comment);
}

beforeAll(async () => {
  browser = await launch();
  await webhook.start();
  await slack.start();
  const yaml = [
    'alerting:',
    '  repeatInterval: 1h',
    '  rules:',
    '    - { kind: persisted, window: 24h }',
    // A label of the rule's own, named as a hook might be: the feed's alert is still of no single hook.
    '    - { kind: silence, scope: feed, after: 2h, labels: { hook: nightly-sync } }',
    '  receivers:',
    `    - { name: oncall, type: webhook, url: "${webhook.url}/hook" }`,
    `    - { name: team-chat, type: slack, url: "${slack.url}/slack" }`,
    '',
  ].join('\n');
  svc = await startTestService({ HOOKWATCH_ALERT_EVALUATION_INTERVAL: '200ms' }, { now: clock.now, yaml });
});

afterEach(async () => {
  expect(await closePages(open)).toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await svc?.close();
  await webhook.close();
  await slack.close();
});

describe('silence link', () => {
  it('opens the silence form prefilled from a Slack message and a webhook body; confirming it mutes the repeat', async () => {
    const body = hookRequest([{ hookEvent: 'PreToolUse', hookName: HOOK, timeMs: eventAt, sizes: { stdout: 10_600, additionalContext: 0, persisted: 1 } }]);
    expect((await postOtlp(svc.otlpHttpUrl, '/v1/logs', body, { 'content-type': 'application/json' })).status).toBe(200);
    await webhook.waitFor(1, 10_000);
    await slack.waitFor(1, 10_000);
    const [sent] = webhook.bodies<AlertmanagerWebhookBody>();
    const alert = sent?.alerts[0];
    expect(alert?.labels).toMatchObject({ alertname: 'persisted', hook_name: HOOK, hook_event: 'PreToolUse' });
    // The link goes with the annotations, where Alertmanager consumers read runbook and dashboard links; the
    // hook's page stays the generatorURL.
    const link = alert?.annotations['silence_url'] ?? '';
    expect(link.startsWith(`${svc.httpUrl}/alerts?`)).toBe(true);
    expect(sent?.commonAnnotations['silence_url']).toBe(link);
    expect(alert?.generatorURL.startsWith(`${svc.httpUrl}/hooks/`)).toBe(true);
    // Slack shows it as a second link, beside the dashboard's.
    const [text] = slack.bodies<{ text: string }>().map((b) => b.text);
    expect(text).toContain(`<${alert?.generatorURL}|Open in hookwatch> · <${link}|Silence>`);

    const { page: p } = await page();
    await p.goto(link);
    await waitLoaded(p);
    const form = p.locator('#silence-new form.silence-form');
    const matchers = await p.locator('#silence-new .silence-matchers li').allTextContents();
    expect(matchers.sort()).toEqual(Object.entries(alert?.labels ?? {}).map(([k, v]) => `${k}=${JSON.stringify(v)}`).sort());
    // Focused, waiting for the person to confirm: opening the link created nothing.
    expect(await p.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Reason');
    expect((await getJson<{ silences: Silence[] }>(svc.httpUrl, '/api/v1/silences')).body.silences).toEqual([]);
    expect(await p.textContent('#silence-new-alert')).toBe('The alert is firing.');
    await screenshot(p, 'silence-link');

    await form.locator('select[aria-label="Silence for"]').selectOption({ label: '4 hours' });
    await form.locator('input[aria-label="Reason"]').fill('shrinking the Write|Edit hook output');
    await form.locator('input[aria-label="Your name"]').fill('platform on-call');
    await form.locator('button[type="submit"]').click();
    await form.locator('.silence-result', { hasText: 'Silenced until' }).waitFor();
    // The alert's own labels: nothing to warn of.
    expect(await form.locator('.silence-warning').count()).toBe(0);
    const [made] = (await getJson<{ silences: Silence[] }>(svc.httpUrl, '/api/v1/silences')).body.silences;
    expect(made?.matchers.map((m) => [m.name, m.value, m.isRegex, m.isEqual ?? true]).sort())
      .toEqual(Object.entries(alert?.labels ?? {}).map(([k, v]) => [k, v, false, true]).sort());
    expect(made?.createdBy).toBe('platform on-call');
    const silenced = await eventually('the alert silenced', async () => {
      const r = (await getJson<AlertsResponse>(svc.httpUrl, '/api/v1/alerts')).body;
      return r.alerts.find((a) => a.labels['hook_name'] === HOOK && a.silencedBy.includes(made?.id ?? ''));
    });
    expect(silenced.state).toBe('firing');
    // The page says so on the alert's card too.
    await p.locator(`article[data-alert-id="${silenced.id}"] .chip`, { hasText: 'silenced by platform on-call' }).waitFor();

    // Past repeatInterval the repeat is due, and muted: neither receiver hears of the alert again...
    clock.advance(90 * MIN);
    await new Promise((r) => setTimeout(r, 2_000));
    expect([webhook.requests.length, slack.requests.length]).toEqual([1, 1]);
    // ...until the silence is expired: then both are sent it at once, so the repeat was due all along.
    expect((await fetch(`${svc.httpUrl}/api/v1/silences/${made?.id}`, { method: 'DELETE' })).status).toBe(200);
    await webhook.waitFor(2, 10_000);
    await slack.waitFor(2, 10_000);
    expect(webhook.bodies<AlertmanagerWebhookBody>()[1]?.alerts[0]?.labels['hook_name']).toBe(HOOK);
  });

  it('links a quiet feed\'s alert to the overview around its last event', async () => {
    const before = webhook.requests.length;
    clock.advance(2 * 60 * MIN);
    const feed = await eventually('the feed alert notified', async () => {
      await until('a notification', () => webhook.requests.length > before);
      return webhook.bodies<AlertmanagerWebhookBody>().slice(before).map((b) => b.alerts[0]).find((a) => a?.labels['scope'] === 'feed');
    });
    const link = new URL(feed.generatorURL);
    expect(`${link.origin}${link.pathname}`).toBe(`${svc.httpUrl}/`);
    // The alert's evidence is the feed's last event: its range runs from an hour before it (to a chart bucket) to
    // when it was notified, hookwatch's now.
    const listed = await feedAlert();
    expect(Date.parse(listed.firstEventAt ?? '')).toBe(eventAt);
    expect(Object.fromEntries(link.searchParams)).toEqual({ range: 'custom', ...alertRange(listed, clock.now()) });
    expect(Date.parse(link.searchParams.get('from') ?? '')).toBeLessThanOrEqual(eventAt - 60 * MIN);
    const { page: p } = await page();
    await p.goto(feed.generatorURL);
    await waitLoaded(p);
    expect(await p.textContent('h1 .range-label')).toMatch(/ to /);
  });

  /** Opens the silence link and fills its form in part: one day, a reason, the severity matcher unchecked. */
  async function fillLinkedForm(reason: string) {
    const { page: p } = await page();
    await p.goto(silenceUrl());
    await waitLoaded(p);
    const form = p.locator('#silence-new form.silence-form');
    await form.locator('select[aria-label="Silence for"]').selectOption({ label: '1 day' });
    await form.locator('input[aria-label="Reason"]').fill(reason);
    const severity = p.locator('#silence-new').getByRole('checkbox', { name: 'severity="critical"', exact: true });
    await severity.uncheck();
    return { p, form, severity };
  }

  it('keeps the linked form as filled in through range and state filter changes; once the silence is made, a reload does not open it again', async () => {
    const { p, form, severity } = await fillLinkedForm('hook rewrite under review');
    await p.selectOption('#alert-state', 'firing');
    await p.waitForURL(/state=firing/);
    await waitLoaded(p, 2);
    await p.click('button[data-range="7d"]');
    await p.waitForURL(/range=7d/);
    await waitLoaded(p, 3);
    // Still there, as the person left it: the link's labels stay in the URL until the silence is made or dismissed.
    expect(await p.isVisible('#silence-new form.silence-form')).toBe(true);
    expect(await form.locator('input[aria-label="Reason"]').inputValue()).toBe('hook rewrite under review');
    expect(await form.locator('select[aria-label="Silence for"]').inputValue()).toBe(String(86_400_000));
    expect(await severity.isChecked()).toBe(false);
    expect([...new URL(p.url()).searchParams.keys()].filter((k) => k.startsWith('silence.')).sort())
      .toEqual([...new URL(silenceUrl()).searchParams.keys()].sort());
    expect(new URL(p.url()).searchParams.get('state')).toBe('firing');
    await form.locator('input[aria-label="Your name"]').fill('platform on-call');
    await form.locator('button[type="submit"]').click();
    await form.locator('.silence-result', { hasText: 'Silenced until' }).waitFor();
    const [made] = await silencesFor('hook rewrite under review');
    expect(made?.createdBy).toBe('platform on-call');
    expect(made?.matchers.map((m) => m.name).sort()).toEqual(['alertname', 'hook_event', 'hook_name']);
    // Made: the URL no longer asks for it, so a reload (or a range change) shows the page without the form.
    const url = new URL(p.url());
    expect([...url.searchParams.keys()].filter((k) => k.startsWith('silence.'))).toEqual([]);
    expect([url.searchParams.get('state'), url.searchParams.get('range')]).toEqual(['firing', '7d']);
    await p.reload();
    await waitLoaded(p);
    expect(await p.isHidden('#silence-new')).toBe(true);
    expect((await fetch(`${svc.httpUrl}/api/v1/silences/${made?.id}`, { method: 'DELETE' })).status).toBe(200);
  });

  it('opens the linked form afresh when the link is opened again after going elsewhere', async () => {
    const { p, form, severity } = await fillLinkedForm('left half typed');
    await p.getByRole('link', { name: 'Overview', exact: true }).click();
    await p.waitForURL((u) => u.pathname === '/');
    await waitLoaded(p, 2);
    // Back to the link in the same tab: a new visit, the form as the link gives it.
    await p.goBack();
    await p.waitForURL((u) => u.pathname === '/alerts');
    await waitLoaded(p, 3);
    expect(await form.locator('input[aria-label="Reason"]').inputValue()).toBe('');
    expect(await form.locator('select[aria-label="Silence for"]').inputValue()).toBe(String(3_600_000));
    expect(await severity.isChecked()).toBe(true);
  });

  it('closes the linked form on Cancel, for good', async () => {
    const { page: p } = await page();
    await p.goto(silenceUrl());
    await waitLoaded(p);
    await p.locator('#silence-new form.silence-form input[aria-label="Reason"]').fill('not now');
    await p.locator('#silence-new button', { hasText: 'Cancel' }).click();
    expect(await p.isHidden('#silence-new')).toBe(true);
    expect([...new URL(p.url()).searchParams.keys()].filter((k) => k.startsWith('silence.'))).toEqual([]);
    await p.click('button[data-range="7d"]');
    await waitLoaded(p, 2);
    expect(await p.isHidden('#silence-new')).toBe(true);
    await p.reload();
    await waitLoaded(p);
    expect(await p.isHidden('#silence-new')).toBe(true);
    expect(await silencesFor('not now')).toEqual([]);
  });

  it('widens the linked silence by unchecking matchers, and says one must stay', async () => {
    const { page: p } = await page();
    await p.goto(silenceUrl());
    await waitLoaded(p);
    const panel = p.locator('#silence-new');
    const form = panel.locator('form.silence-form');
    // Each matcher a checkbox, named as the list writes it.
    const labels = webhook.bodies<AlertmanagerWebhookBody>()[0]?.alerts[0]?.labels ?? {};
    expect(Object.keys(labels).sort()).toEqual(['alertname', 'hook_event', 'hook_name', 'severity']);
    const box = (name: string) => panel.getByRole('checkbox', { name: `${name}=${JSON.stringify(labels[name])}`, exact: true });
    for (const name of Object.keys(labels)) {
      expect(await box(name).isChecked()).toBe(true);
      await box(name).uncheck();
    }
    // None left: a silence of no matcher would mute every alert; the page says so and creates nothing.
    await panel.locator('p[role="status"]', { hasText: 'Keep at least one matcher' }).waitFor();
    await form.locator('select[aria-label="Silence for"]').selectOption({ label: '1 day' });
    await form.locator('input[aria-label="Reason"]').fill('mute every rule of the hook');
    await form.locator('input[aria-label="Your name"]').fill('platform on-call');
    await form.locator('button[type="submit"]').click();
    await form.locator('.silence-result', { hasText: 'Keep at least one matcher' }).waitFor();
    expect(await silencesFor('mute every rule of the hook')).toEqual([]);
    // Every rule of the hook, whatever its severity: its hook labels only.
    await box('hook_name').check();
    await box('hook_event').check();
    await form.locator('button[type="submit"]').click();
    await form.locator('.silence-result', { hasText: 'Silenced until' }).waitFor();
    const [made] = await silencesFor('mute every rule of the hook');
    expect(made?.matchers.map((m) => `${m.name}=${m.value}`).sort()).toEqual(['hook_event=PreToolUse', `hook_name=${HOOK}`]);
    expect((await fetch(`${svc.httpUrl}/api/v1/silences/${made?.id}`, { method: 'DELETE' })).status).toBe(200);
  });

  it('ends a silence made from a link or a card the chosen time after hookwatch\'s now, hours ahead of the browser\'s', async () => {
    // Moved on by the tests above: an hour's silence ending an hour after the browser's now has passed there.
    expect(clock.now() - Date.now()).toBeGreaterThan(2 * 60 * MIN);
    const { page: p } = await page();
    await p.goto(silenceUrl());
    await waitLoaded(p);
    const linked = await silenceWith(p.locator('#silence-new form.silence-form'), 'an hour from the link');
    const alert = await eventually('the alert listed', async () =>
      (await getJson<AlertsResponse>(svc.httpUrl, '/api/v1/alerts')).body.alerts.find((a) => a.labels['hook_name'] === HOOK && a.state === 'firing'));
    const card = p.locator(`article[data-alert-id="${alert.id}"]`);
    await card.locator('details.silence > summary').click();
    const fromCard = await silenceWith(card.locator('form.silence-form'), 'an hour from the card');
    for (const made of [linked, fromCard]) {
      // Started by hookwatch at its now; ended an hour on, give or take the time the page took to submit it.
      expect(Date.parse(made.startsAt)).toBe(clock.now());
      expect(Date.parse(made.endsAt) - clock.now()).toBeGreaterThanOrEqual(60 * MIN);
      expect(Date.parse(made.endsAt) - clock.now()).toBeLessThan(61 * MIN);
      expect((await fetch(`${svc.httpUrl}/api/v1/silences/${made.id}`, { method: 'DELETE' })).status).toBe(200);
    }
  });

  it('makes the silence of a link naming a label no alert carries, and says so, naming the label and those alerts carry', async () => {
    const { page: p } = await page();
    // A link written by hand, or made before a rule's labels changed: `teem` is no label of any rule configured.
    await p.goto(`${svc.httpUrl}/alerts?${silenceQuery({ alertname: 'persisted', hook_name: HOOK, teem: 'platform' })}`);
    await waitLoaded(p);
    const form = p.locator('#silence-new form.silence-form');
    const made = await silenceWith(form, 'a label mistyped in a link');
    expect(made.matchers.map((m) => m.name)).toEqual(['alertname', 'hook_name', 'teem']);
    const warnings = await form.locator('.silence-result .silence-warning').allTextContents();
    expect(warnings).toEqual(['matchers[2]: no alert rule configured gives alerts the label teem; until one does, this matcher reads it as empty and matches no alert: the silence mutes nothing (alerts carry: alertname, severity, hook_event, hook_name, service_name, service_version, scope, hook)']);
    expect(await form.locator('.silence-result').textContent()).toMatch(/^Silenced until /);
    // Each warning on a line of its own, inside the phone-wide page.
    await p.setViewportSize({ width: 390, height: 844 });
    const box = await form.locator('.silence-warning').boundingBox();
    expect(box).not.toBeNull();
    expect(box!.x + box!.width).toBeLessThanOrEqual(390);
    expect((await fetch(`${svc.httpUrl}/api/v1/silences/${made.id}`, { method: 'DELETE' })).status).toBe(200);
  });

  it('links a quiet feed\'s alert card to the overview around its last event, as its notification does', async () => {
    const feed = await feedAlert();
    const { page: p } = await page();
    await p.goto(`${svc.httpUrl}/alerts?refresh=off`);
    await waitLoaded(p);
    const card = p.locator(`article[data-alert-id="${feed.id}"]`);
    // A rule's own label named `hook` does not make it a hook's alert: it is the whole feed's.
    expect(await card.locator('.alert-head').textContent()).toContain('all hooks (the whole feed)');
    expect(await card.locator('details.silence > summary').textContent()).toBe('Silence this alert');
    const href = await card.locator('.alert-head a').getAttribute('href') ?? '';
    const link = new URL(href, svc.httpUrl);
    expect(link.pathname).toBe('/');
    // The notification's range: to hookwatch's now, not to the browser's, hours behind it (give or take the
    // moment the page took since the alerts API said what time it is).
    const range = alertRange(feed, clock.now());
    expect([link.searchParams.get('range'), link.searchParams.get('from')]).toEqual(['custom', range.from]);
    expect(Date.parse(link.searchParams.get('to') ?? '')).toBeGreaterThanOrEqual(Date.parse(range.to));
    expect(Date.parse(link.searchParams.get('to') ?? '')).toBeLessThanOrEqual(Date.parse(alertRange(feed, clock.now() + MIN).to));
    await card.locator('.alert-head a').click();
    await waitLoaded(p, 2);
    expect(new URL(p.url()).pathname).toBe('/');
    expect(await p.textContent('h1 .range-label')).toMatch(/ to /);
  });
});
