/**
 * Slack incoming webhook body: `{"text": ...}` a person reads in a channel: which hook, what was lost, since
 * when, and a link to the dashboard, and while it fires one to silence it (a superseded resolution said as such,
 * never as an all-clear). Slack's mrkdwn needs &, < and > escaped; characters that would not read as themselves
 * are written out (below).
 */
import { hookDataExpired } from '../../../shared/src/alert-range.ts';
import { printable } from '../../../shared/src/printable.ts';
import { dashboardLink, silenceLink } from './links.ts';
import type { BodyRenderer, LinkContext, Notification } from './model.ts';

/**
 * Slack's markup characters escaped, then what would not read as itself written out by printable() (as the
 * command-line reports print names): control characters, line and paragraph separators, the bidirectional marks,
 * embeddings, overrides and isolates, and the other invisible format characters but an emoji's. Raw, a line break
 * starts a line of the name's choosing (a forged "[RESOLVED]" under a firing alert), an override turns the text
 * after it around, and a zero-width space makes a name read as another's.
 */
function esc(s: string): string {
  return printable(s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;'));
}

/** The Slack message text for one notification. */
export function slackText(n: Notification, ctx: LinkContext): string {
  const a = n.alert;
  const hook = a.labels['hook_name'] ? ` · ${a.labels['hook_name']}` : '';
  // A headroom or growth alert resolves as superseded when its hook went over the cap: no all-clear tick for it.
  const superseded = a.annotations['superseded_by'];
  // A quiet hook's alert ends when retention removed the hook's data: no all-clear tick, it was not heard again.
  const state = n.status === 'firing' ? ':rotating_light: *[FIRING]'
    : superseded !== undefined ? `:warning: *[SUPERSEDED by ${superseded}]`
    : hookDataExpired(a) ? ':heavy_minus_sign: *[ENDED: hook data expired]' : ':white_check_mark: *[RESOLVED]';
  const head = `${esc(state)} ${esc(a.rule)}*${esc(hook)}`;
  const lines = [head];
  if (a.annotations['summary']) lines.push(esc(a.annotations['summary']));
  if (a.annotations['description']) lines.push(esc(a.annotations['description']));
  // A hook hookwatch guard trims sits near the cap on purpose: said beside what the alert reports of it.
  if (a.annotations['guard']) lines.push(esc(a.annotations['guard']));
  const when = n.status === 'firing' ? `Since ${a.startsAt}` : `From ${a.startsAt} to ${a.endsAt ?? 'now'}`;
  const extra = Object.entries(a.labels).filter(([k]) => !['alertname', 'hook_name', 'hook_event'].includes(k)).map(([k, v]) => `${k}=${v}`);
  lines.push(esc([when, ...extra].join(' · ')));
  const link = dashboardLink(ctx, a, n.createdAtMs);
  const silence = silenceLink(ctx, n);
  if (link) lines.push([`<${link}|Open in hookwatch>`, ...(silence ? [`<${silence}|Silence>`] : [])].join(' · '));
  return lines.join('\n');
}

/** Renderer for `type: slack` receivers. */
export function slackRenderer(ctx: LinkContext): BodyRenderer {
  return { render: (n) => JSON.stringify({ text: slackText(n, ctx) }) };
}
