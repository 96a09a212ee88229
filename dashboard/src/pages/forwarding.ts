/**
 * Forwarding: in inline mode, the downstream destination's durable queue (depth, bytes against the bound, oldest
 * age, retries, dead letters, the last error) so an outage is seen before the queue fills and clients get 503s;
 * in fan-out mode, a note that nothing is forwarded.
 */
import type { ForwardingDestination, ForwardingResponse } from '../../../shared/src/api.ts';
import { api } from '../api.ts';
import { h, replace, table } from '../dom.ts';
import type { Page, PageContext } from '../page.ts';
import { deadLetterPanel } from './dead-letters.ts';
import { deadLetterRows, destinationView, type Figure } from './forwarding-state.ts';

function kpi(f: Figure): HTMLElement {
  return h('div', { class: 'kpi', 'data-kpi': f.id }, h('div', { class: 'kpi-label' }, f.label), h('div', { class: 'kpi-value' }, f.value), f.note ? h('div', { class: 'kpi-note muted' }, f.note) : null);
}

function destinationPanel(d: ForwardingDestination): HTMLElement {
  const v = destinationView(d);
  return h('section', { class: 'panel', 'data-destination': d.destination },
    h('h2', null, d.destination),
    h('p', { class: v.alarm ? 'banner banner-error' : 'muted', 'data-field': 'state' }, ...v.state),
    h('div', { class: 'kpis' }, ...v.figures.map(kpi)),
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
      const rows = deadLetterRows(r.deadLetters);
      replace(body,
        ...r.destinations.map(destinationPanel),
        r.deadLetterSummary ? deadLetterPanel(r.deadLetterSummary, { note, replayed: (n) => {
          note = n;
          void page.refresh(new AbortController().signal).catch(() => {});
        } }) : null,
        rows === null
          ? h('p', { class: 'muted', id: 'dead-letters-none' }, 'No dead letters.')
          : table('Recent dead letters (requests the destination refused for good)', ['Signal', 'Size', 'Received', 'Failed', 'Attempts', 'Status', 'Reason'], rows, { class: 'data dead-letters' }),
      );
    },
    destroy() {},
  };
  return page;
}
