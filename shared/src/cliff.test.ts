import { describe, expect, it } from 'vitest';
import { sizesMaySum } from './cliff.ts';

describe('sizesMaySum', () => {
  it('is false only when every execution ran one hook command and reported its sizes', () => {
    expect(sizesMaySum({ executions: 3, numHooks: 3, sizeUnknownExecutions: 0 })).toBe(false);
    // One ran two commands: its sizes are sums.
    expect(sizesMaySum({ executions: 3, numHooks: 4, sizeUnknownExecutions: 0 })).toBe(true);
    // One did not say how many it ran.
    expect(sizesMaySum({ executions: 3, numHooks: 2, sizeUnknownExecutions: 0 })).toBe(true);
    // One ran two commands and one, from a client before num_hooks and sizes, said neither: the commands run equal
    // the executions, and the first's size is still a sum.
    expect(sizesMaySum({ executions: 2, numHooks: 2, sizeUnknownExecutions: 1 })).toBe(true);
  });
});
