/** Waiting on real processes: whether one still runs, and a condition met within a few seconds. */
import { running } from '../../src/tools/common/processes.ts';

/** Whether a process runs: dead but not reaped yet (its parent, the shell, is gone) is not alive, nor one gone meanwhile. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  return running(pid);
}

/** Resolves once `condition` holds, checked every 25 ms; throws, saying `what` was awaited, after `withinMs` (5 seconds). */
export async function waitFor(condition: () => Promise<boolean>, { what = 'condition', withinMs = 5_000 }: { what?: string; withinMs?: number } = {}): Promise<void> {
  for (let i = 0; i < withinMs / 25; i++) {
    if (await condition()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`${what} not met`);
}
