/** Waiting on real processes: whether one still runs, and a condition met within a few seconds. */
import { readFileSync } from 'node:fs';

/** Whether a process runs: dead but not reaped yet (its parent, the shell, is gone) is not alive. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
}

/** Resolves once `condition` holds, checked every 25 ms; throws after 5 seconds. */
export async function waitFor(condition: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await condition()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('condition not met');
}
