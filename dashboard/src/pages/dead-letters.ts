/**
 * The dead letters panel of the forwarding page: how many requests the destination refused (for good, or past
 * forward.retry.maxElapsedTime), their size against their own bound, the oldest, the last refusal, and a Replay
 * button that puts them back in the queue once the cause (a key, a route, a bad deploy) is fixed.
 */
import type { DeadLetterSummaryInfo, ReplayResponse } from '../../../shared/src/api.ts';
import { api } from '../api.ts';
import { h, replace } from '../dom.ts';
import { bytes, dateTime, num } from '../format.ts';

/** What the Replay button answered last, so the note survives the page's periodic redraw. */
export function replayNote(r: ReplayResponse): string {
  const left = r.remaining ? ` ${num(r.remaining)} stay dead letters until the queue has room; replay again later.` : '';
  return `Requeued ${num(r.replayed)} dead letter${r.replayed === 1 ? '' : 's'}.${left}`;
}

export interface DeadLetterPanelOptions {
  /** The last replay's note, shown under the button. */
  note: string;
  /** Called with the note after a replay (or its failure), so the page can keep it and redraw. */
  replayed(note: string): void;
}

export function deadLetterPanel(s: DeadLetterSummaryInfo, opts: DeadLetterPanelOptions): HTMLElement {
  const result = h('span', { class: 'replay-result', role: 'status' }, opts.note);
  const button = h('button', {
    type: 'button',
    id: 'replay-dead-letters',
    disabled: s.count === 0,
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
  const full = s.maxBytes > 0 ? s.bytes / s.maxBytes : 0;
  return h('section', { class: 'panel', id: 'dead-letter-summary' },
    h('h2', null, 'Dead letters'),
    h('div', { class: 'kpis' },
      h('div', { class: 'kpi', 'data-kpi': 'dead-letters-held' }, h('div', { class: 'kpi-label' }, 'Held for replay'), h('div', { class: 'kpi-value' }, num(s.count)),
        s.evicted ? h('div', { class: 'kpi-note muted' }, `${num(s.evicted)} evicted over the bound`) : null),
      h('div', { class: 'kpi', 'data-kpi': 'dead-letter-bytes' }, h('div', { class: 'kpi-label' }, 'Size'), h('div', { class: 'kpi-value' }, bytes(s.bytes)),
        h('div', { class: 'kpi-note muted' }, `${(full * 100).toFixed(1)}% of ${bytes(s.maxBytes)}; over it the oldest go`)),
      h('div', { class: 'kpi', 'data-kpi': 'dead-letter-oldest' }, h('div', { class: 'kpi-label' }, 'Oldest'), h('div', { class: 'kpi-value' }, s.oldestFailedAt ? dateTime(s.oldestFailedAt) : 'none')),
    ),
    s.lastReason ? h('p', { class: 'muted', 'data-field': 'dead-letter-last-error' }, `Last refusal: ${s.lastReason}`) : null,
    h('p', null, button, ' ', result),
  );
}
