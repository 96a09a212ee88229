/**
 * Classification against the ground truth it summarises: random hook firings (several hooks, each with its own
 * additionalContext and plain stdout) reported as Claude Code reports them (sums over num_hooks, one persisted
 * count per string over the cap). over iff some string went over; ok only when every string is within the near
 * threshold; unknown exactly when the size attributes are absent.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OUTPUT_CAP_CHARS } from '../../../shared/src/cliff.ts';
import { classifyExecution } from './cliff.ts';

const NEAR = 8000;
const len = fc.oneof(fc.integer({ min: 0, max: 30_000 }), fc.constantFrom(NEAR, NEAR + 1, OUTPUT_CAP_CHARS, OUTPUT_CAP_CHARS + 1));
const hook = fc.record({ ac: len, stdout: len });

describe('classifyExecution against per-string truth', () => {
  it('over iff a string went over the cap; ok only if every string is within the threshold', () => {
    fc.assert(fc.property(fc.array(hook, { minLength: 1, maxLength: 4 }), (hooks) => {
      const strings = hooks.flatMap((h) => [h.ac, h.stdout]);
      const facts = {
        numHooks: hooks.length,
        // stdout_chars counts raw stdout; here the JSON wrapper carrying additionalContext is left out (a lower bound).
        stdoutChars: hooks.reduce((s, h) => s + h.stdout, 0),
        additionalContextChars: hooks.reduce((s, h) => s + h.ac, 0),
        systemMessageChars: 0,
        initialUserMessageChars: 0,
        outputsPersisted: strings.filter((n) => n > OUTPUT_CAP_CHARS).length,
      };
      const status = classifyExecution(facts, NEAR);
      expect(status === 'over').toBe(strings.some((n) => n > OUTPUT_CAP_CHARS));
      if (status === 'ok') expect(strings.every((n) => n <= NEAR)).toBe(true);
      expect(status).not.toBe('unknown');
    }), { numRuns: 2000 });
  });

  it('unknown without size attributes, whatever the other counts', () => {
    expect(classifyExecution({ numHooks: 2, stdoutChars: null, additionalContextChars: null, systemMessageChars: null, initialUserMessageChars: null, outputsPersisted: null }, NEAR)).toBe('unknown');
    expect(classifyExecution({ numHooks: 2, stdoutChars: null, additionalContextChars: null, systemMessageChars: null, initialUserMessageChars: null, outputsPersisted: 1 }, NEAR)).toBe('over');
  });
});
