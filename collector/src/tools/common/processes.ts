/** The processes a tool runs, read from /proc: whether one runs, what runs below it, what runs in its group. */
import { readdirSync, readFileSync } from 'node:fs';

/**
 * The fields of /proc/<pid>/stat after `pid (comm)` (state, ppid, ...); undefined once the process is gone, or
 * where there is no /proc. Comm may hold spaces and parentheses, so the fields are read after the last ')'.
 */
function procStat(pid: number | string): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** Whether a process still runs: there, and not a zombie waiting for its parent to reap it. */
export function running(pid: number): boolean {
  const state = procStat(pid)?.[0];
  return state !== undefined && state !== 'Z';
}

/** The processes there now, from /proc, each with its stat fields (procStat); undefined where there is no /proc. */
function processes(): Map<number, string[]> | undefined {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return undefined;
  }
  const out = new Map<number, string[]>();
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = procStat(entry);
    if (stat !== undefined) out.set(Number(entry), stat);
  }
  return out;
}

/**
 * The processes below `root` now (children, their children...), from /proc; none where there is no /proc. With
 * `outsideGroup`, only those that left that process group (which a signal to the group misses). A stop signals
 * them with the command: a command line's pipeline (`curl | jq`) would otherwise outlive it. Several roots give
 * what runs below any of them, as one look at /proc.
 */
export function descendants(root: number | readonly number[], outsideGroup?: number): number[] {
  const all = processes() ?? new Map<number, string[]>();
  const childrenOf = new Map<number, number[]>();
  for (const [pid, stat] of all) {
    const list = childrenOf.get(Number(stat[1])) ?? [];
    list.push(pid);
    childrenOf.set(Number(stat[1]), list);
  }
  const out: number[] = [];
  const queue = typeof root === 'number' ? [root] : [...root];
  for (let pid = queue.shift(); pid !== undefined; pid = queue.shift()) {
    for (const child of childrenOf.get(pid) ?? []) {
      queue.push(child);
      if (outsideGroup === undefined || all.get(child)?.[2] !== String(outsideGroup)) out.push(child);
    }
  }
  return out;
}

/**
 * Whether a process of group `pgid` still runs: one ended but not reaped yet (its parent gone, under an init
 * that does not reap) does not. Where there is no /proc, whether the group has any process at all.
 */
export function groupRuns(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch {
    return false;
  }
  const all = processes();
  return all === undefined || [...all.values()].some((stat) => stat[2] === String(pgid) && stat[0] !== 'Z');
}
