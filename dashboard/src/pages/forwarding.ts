/**
 * Forwarding: in inline mode, the downstream destination's durable queue (depth, bytes against the bound, oldest
 * age, retries, dead letters, the last error) so an outage is seen before the queue fills and clients get 503s;
 * in fan-out mode, a note that nothing is forwarded.
 */
import type { ForwardingDestination, ForwardingResponse } from '../../../shared/src/api.ts';
import { api } from '../api.ts';
import { h, replace, table } from '../dom.ts';
import { bytes, dateTime, num } from '../format.ts';
import type { Page, PageContext } from '../page.ts';
import { deadLetterPanel } from './dead-letters.ts';

const STATE_TEXT: Record<ForwardingDestination['state'], string> = {
  idle: 'up to date',
  sending: 'sending',
  backing_off: 'waiting to retry',
  stopped: 'stopped',
};

/** "4 min 10 s"-style durations; "none" for null. */
export function age(ms: number | null): string {
  if (ms === null) return 'none';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3600)} h`;
}

function kpi(id: string, label: string, value: string, note?: string): HTMLElement {
  return h('div', { class: 'kpi', 'data-kpi': id }, h('div', { class: 'kpi-label' }, label), h('div', { class: 'kpi-value' }, value), note ? h('div', { class: 'kpi-note muted' }, note) : null);
}

function destinationPanel(d: ForwardingDestination): HTMLElement {
  const full = d.maxBytes > 0 ? d.bytes / d.maxBytes : 0;
  return h('section', { class: 'panel', 'data-destination': d.destination },
    h('h2', null, d.destination),
    h('p', { class: d.state === 'backing_off' ? 'banner banner-error' : 'muted', 'data-field': 'state' },
      `State: ${STATE_TEXT[d.state]}`,
      d.nextAttemptAt ? ` (next attempt ${dateTime(d.nextAttemptAt)})` : '',
      d.lastError ? ` · last error: ${d.lastError}` : ''),
    h('div', { class: 'kpis' },
      kpi('depth', 'Queued requests', num(d.depth)),
      kpi('bytes', 'Queue size', bytes(d.bytes), `${(full * 100).toFixed(1)}% of ${bytes(d.maxBytes)}; full means clients get 503`),
      kpi('oldest', 'Oldest waiting', age(d.oldestAgeMs)),
      kpi('delivered', 'Delivered', num(d.delivered), d.lastSuccessAt ? `last ${dateTime(d.lastSuccessAt)}` : 'none yet'),
      kpi('retries', 'Retries', num(d.retries), d.consecutiveFailures ? `${num(d.consecutiveFailures)} failures in a row` : undefined),
      kpi('dead-letters', 'Dead letters', num(d.deadLetters), 'refused for good by the destination'),
      kpi('refused-full', 'Refused (queue full)', num(d.refusedFull)),
    ),
  );
}

/** Builds the forwarding page. */
export function forwardingPage(root: HTMLElement, _ctx: PageContext): Page {
  document.title = 'Forwarding · hookwatch';
  const body = h('div', { id: 'forwarding' }, h('p', { class: 'muted' }, 'Loading…'));
  replace(root, h('h1', null, 'Forwarding'), body);
  let note = '';
  const page: Page = {
    async refresh(signal) {
      const r: ForwardingResponse = await api.forwarding(signal);
      if (r.mode === 'fan-out') {
        replace(body, h('section', { class: 'panel', id: 'fan-out' },
          h('h2', null, 'Fan-out mode: nothing is forwarded'),
          h('p', null, 'hookwatch keeps what it is sent and passes nothing on. To put hookwatch in front of your backend, set HOOKWATCH_FORWARD_ENDPOINT (see docs/forwarding.md).')));
        return;
      }
      replace(body,
        ...r.destinations.map(destinationPanel),
        r.deadLetterSummary ? deadLetterPanel(r.deadLetterSummary, { note, replayed: (n) => {
          note = n;
          void page.refresh(new AbortController().signal).catch(() => {});
        } }) : null,
        r.deadLetters.length === 0
          ? h('p', { class: 'muted', id: 'dead-letters-none' }, 'No dead letters.')
          : table('Recent dead letters (requests the destination refused for good)', ['Signal', 'Size', 'Received', 'Failed', 'Attempts', 'Status', 'Reason'],
            r.deadLetters.map((d) => [d.signal, bytes(d.bytes), dateTime(d.receivedAt), dateTime(d.failedAt), num(d.attempts), d.status === null ? '–' : String(d.status), d.reason]),
            { class: 'data dead-letters' }),
      );
    },
    destroy() {},
  };
  return page;
}
