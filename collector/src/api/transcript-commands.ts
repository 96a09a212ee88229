/**
 * GET /api/v1/hooks/{id}/commands: per command of one hook, what the transcripts sent by `hookwatch scan --send`
 * show. Telemetry sums the commands of one event; these figures come from transcripts and say so.
 */
import type { Router } from 'express';
import type { TranscriptCommandsResponse } from '../../../shared/src/transcript-api.ts';
import type { Store } from '../store/store.ts';
import { onlyParams, parseHookId, parseRange } from './params.ts';
import { transcriptCommand } from './wire.ts';
import { formatRfc3339 } from '../rfc3339.ts';

export function addTranscriptCommandsRoute(router: Router, opts: { store: Store; now: () => number }): void {
  router.get('/api/v1/hooks/:id/commands', async (req, res) => {
    const id = parseHookId(String(req.params['id']));
    const q = req.query as Record<string, unknown>;
    onlyParams(q, ['from', 'to']);
    const range = parseRange(q, opts.now());
    const commands = await opts.store.transcriptCommands(id, range);
    const body: TranscriptCommandsResponse = {
      source: 'transcript',
      hookId: id,
      from: formatRfc3339(range.fromMs),
      to: formatRfc3339(range.toMs),
      commands: commands.map(transcriptCommand),
    };
    res.json(body);
  });
}
