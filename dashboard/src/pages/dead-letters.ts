/**
 * The dead letters panel of the forwarding page: how many requests the destination refused (for good, or past
 * forward.retry.maxElapsedTime), their size against their own bound, the oldest, the last refusal, and a Replay
 * button that puts them back in the queue once the cause (a key, a route, a bad deploy) is fixed.
 */
import type { DeadLetterSummaryInfo } from '../../../shared/src/api.ts';
import { api } from '../api.ts';
import { h, replace } from '../dom.ts';
import { deadLetterSummaryView, replayNote } from './forwarding-state.ts';

export interface DeadLetterPanelOptions {
  /** The last replay's note, shown under the button. */
  note: string;
  /** Called with the note after a replay (or its failure), so the page can keep it and redraw. */
  replayed(note: string): void;
}

export function deadLetterPanel(s: DeadLetterSummaryInfo, opts: DeadLetterPanelOptions): HTMLElement {
  const v = deadLetterSummaryView(s);
  const result = h('span', { class: 'replay-result', role: 'status' }, opts.note);
  const button = h('button', {
    type: 'button',
    id: 'replay-dead-letters',
    disabled: !v.canReplay,
    onclick: async () => {
      button.disabled = true;
      replace(result, 'Replaying…');
      let note: string;
      try {
        note = replayNote(await api.replayDeadLetters());
      } catch (err) {
        note = `Could not replay: ${(err as Error).message}`;
      }
      replace(result, note);
      opts.replayed(note);
    },
  }, 'Replay');
  return h('section', { class: 'panel', id: 'dead-letter-summary' },
    h('h2', null, 'Dead letters'),
    h('div', { class: 'kpis' },
      h('div', { class: 'kpi', 'data-kpi': 'dead-letters-held' }, h('div', { class: 'kpi-label' }, 'Held for replay'), h('div', { class: 'kpi-value' }, v.held),
        v.evicted ? h('div', { class: 'kpi-note muted' }, v.evicted) : null),
      h('div', { class: 'kpi', 'data-kpi': 'dead-letter-bytes' }, h('div', { class: 'kpi-label' }, 'Size'), h('div', { class: 'kpi-value' }, v.size),
        h('div', { class: 'kpi-note muted' }, v.sizeNote)),
      h('div', { class: 'kpi', 'data-kpi': 'dead-letter-oldest' }, h('div', { class: 'kpi-label' }, 'Oldest'), h('div', { class: 'kpi-value' }, v.oldest)),
    ),
    v.lastRefusal ? h('p', { class: 'muted', 'data-field': 'dead-letter-last-error' }, v.lastRefusal) : null,
    h('p', null, button, ' ', result),
  );
}
