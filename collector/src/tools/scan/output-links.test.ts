import { describe, expect, it } from 'vitest';

import { digestOf, MAX_PENDING_OUTPUTS, PendingOutputs } from './output-links.ts';
import type { PendingOutput } from './output-links.ts';

function entry(runId: string, text: string, more: Partial<PendingOutput> = {}): PendingOutput {
  return {
    runId, sessionId: 's', hookName: 'PostToolUse:Bash', hookEvent: 'PostToolUse', toolUseId: `toolu_${runId}`, command: `./${runId}.sh`, kind: 'additionalContext',
    chars: text.length, digest: digestOf(text), timestamp: undefined, ...more,
  };
}

describe('PendingOutputs', () => {
  it("claims a delivered string's output by its text, the same tool call's first, then the same event's, each once", () => {
    const pending = new PendingOutputs();
    pending.add(entry('a', 'same text'));
    pending.add(entry('b', 'same text'));
    pending.add(entry('c', 'other text'));
    pending.add(entry('d', 'same text', { sessionId: 'another session' }));
    const keys = { sessionId: 's', hookEvent: 'PostToolUse', toolUseId: 'toolu_b', kind: 'additionalContext' as const };
    expect(pending.claimDelivered(keys, 'same text')?.runId).toBe('b');
    expect(pending.claimDelivered(keys, 'same text')?.runId).toBe('a');
    expect(pending.claimDelivered(keys, 'same text')).toBeUndefined();
    expect(pending.claimDelivered({ ...keys, kind: 'systemMessage' }, 'other text')).toBeUndefined();
    expect(pending.claimDelivered({ ...keys, hookEvent: 'PreToolUse', toolUseId: undefined }, 'other text')).toBeUndefined();
    expect(pending.drain().map((e) => e.runId)).toEqual(['c', 'd']);
    expect(pending.drain()).toEqual([]);
  });

  it('claims the over-cap output a marker stands for: the run its saved file names, else the nearest in size', () => {
    const pending = new PendingOutputs();
    pending.add(entry('small', 'x'.repeat(500)));
    pending.add(entry('big', 'x'.repeat(20_000)));
    pending.add(entry('near', 'x'.repeat(12_000)));
    pending.add(entry('named', 'x'.repeat(30_000)));
    const keys = { sessionId: 's', hookEvent: 'PostToolUse', toolUseId: undefined, kind: 'additionalContext' as const };
    expect(pending.claimPersisted(keys, { savedPath: '/p/s/tool-results/hook-toolu_named-PostToolUse-1-additionalContext.txt', sizeLabel: '11.7KB', preview: '' })?.runId).toBe('named');
    expect(pending.claimPersisted(keys, { savedPath: undefined, sizeLabel: '11.7KB', preview: '' })?.runId).toBe('near');
    expect(pending.claimPersisted(keys, { savedPath: undefined, sizeLabel: undefined, preview: '' })?.runId).toBe('big');
    expect(pending.claimPersisted(keys, { savedPath: undefined, sizeLabel: undefined, preview: '' })).toBeUndefined();
    expect(pending.drain().map((e) => e.runId)).toEqual(['small']);
  });

  it('gives up the oldest entries past the limit, and can still claim the newer ones', () => {
    const pending = new PendingOutputs();
    for (let i = 0; i <= MAX_PENDING_OUTPUTS + 1; i++) pending.add(entry(`r${i}`, `text ${i}`));
    const keys = { sessionId: 's', hookEvent: 'PostToolUse', toolUseId: undefined, kind: 'additionalContext' as const };
    expect(pending.claimDelivered(keys, 'text 0')).toBeUndefined();
    expect(pending.claimDelivered(keys, `text ${MAX_PENDING_OUTPUTS}`)?.runId).toBe(`r${MAX_PENDING_OUTPUTS}`);
    const left = pending.drain();
    expect(left.slice(0, 3).map((e) => e.runId)).toEqual(['r0', 'r1', 'r2']);
    expect(left).toHaveLength(MAX_PENDING_OUTPUTS + 1);
  });
});
