/**
 * The hook page's "commands" table: per command of the hook, what the transcripts sent with
 * `hookwatch scan --send` show (runs, largest output, persisted). Telemetry sums the commands of one event into one
 * figure; transcripts tell which command's output went over. The table says where its figures come from, and
 * that the rest of the page comes from telemetry.
 */
import type { TranscriptCommandsResponse } from '../../shared/src/transcript-api.ts';
import { ApiFailure, api, type Query } from './api.ts';
import { h, replace, scrollBox } from './dom.ts';
import { commandRows } from './pages/hook-state.ts';

/** The table for a response; a note instead when no transcript was sent for this hook in the range. */
export function commandsTable(r: TranscriptCommandsResponse): HTMLElement {
  if (r.commands.length === 0) {
    return h('p', { class: 'muted', id: 'commands-empty' }, 'No transcripts sent for this hook in this range. Run `hookwatch scan --send <hookwatch OTLP URL>` to see which command each output came from.');
  }
  return scrollBox('Commands, from transcripts', h('table', { class: 'data', id: 'commands', 'data-source': r.source },
    h('caption', { class: 'sr-only' }, 'Commands, from transcripts'),
    h('thead', null, h('tr', null, ...['Command', 'Runs', 'Largest output', 'Persisted', 'Delivered', 'Largest delivered', 'Sessions'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', null, ...commandRows(r).map((c) => h('tr', { class: c.over ? 'over' : '' },
      h('th', { scope: 'row' }, h('code', null, c.command)),
      ...c.cells.map((text) => h('td', { class: 'num' }, text)),
    ))),
  ));
}

/**
 * The panel on the hook page; `refresh` loads it for the page's hook and range. `unfiltered`: what it says on a
 * page narrowed by filters, which transcripts do not follow.
 */
export function commandsPanel(unfiltered: string | null = null): { element: HTMLElement; refresh(hookId: string, q: Query, signal?: AbortSignal): Promise<void> } {
  const holder = h('div', { id: 'commands-holder' });
  const element = h('section', { class: 'panel', 'aria-labelledby': 'commands-title', id: 'commands-panel' },
    h('h2', { id: 'commands-title' }, 'Commands'),
    h('p', { class: 'hint', id: 'commands-source' },
      'Source: transcripts (hookwatch scan --send), stored apart from telemetry and counted once however often they are sent. ',
      'The figures above come from telemetry (hook_execution_complete), which sums the commands of one execution.'),
    unfiltered === null ? null : h('p', { class: 'warn', id: 'commands-not-filtered' }, unfiltered),
    holder,
  );
  return {
    element,
    async refresh(hookId, q, signal) {
      try {
        replace(holder, commandsTable(await api.commands(hookId, { from: q['from'] || undefined, to: q['to'] || undefined }, signal)));
      } catch (err) {
        // Signed out, the whole page is: said once, in its banner.
        if (!(err instanceof ApiFailure) || err.signedOut) throw err;
        replace(holder, h('p', { class: 'warn' }, err.message));
      }
    },
  };
}
