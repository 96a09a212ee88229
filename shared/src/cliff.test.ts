import { describe, expect, it } from 'vitest';
import { sizesMaySum } from './cliff.ts';

describe('sizesMaySum', () => {
  it('is false only when every execution ran one hook command', () => {
    expect(sizesMaySum({ executions: 3, numHooks: 3, sizesMaySumExecutions: 0 })).toBe(false);
    // One ran two commands: its sizes are sums.
    expect(sizesMaySum({ executions: 3, numHooks: 4, sizesMaySumExecutions: 1 })).toBe(true);
    // One did not say how many it ran.
    expect(sizesMaySum({ executions: 3, numHooks: 2, sizesMaySumExecutions: 1 })).toBe(true);
    // One ran two commands and one did not say how many: two commands for two executions, the first's size a sum.
    expect(sizesMaySum({ executions: 2, numHooks: 2, sizesMaySumExecutions: 2 })).toBe(true);
    // Rows stored before the count was kept read it as 0: the commands run against the executions still tell.
    expect(sizesMaySum({ executions: 3, numHooks: 4, sizesMaySumExecutions: 0 })).toBe(true);
    // An execution without sizes (a client before 2.1.280) that said it ran one command changes nothing.
    expect(sizesMaySum({ executions: 2, numHooks: 2, sizesMaySumExecutions: 0 })).toBe(false);
  });
});
