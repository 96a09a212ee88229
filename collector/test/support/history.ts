/**
 * An organisation's hook history, generated as the stores receive it: HookEvents handed to a store's own
 * ingest(), so whatever a store does with its tables (keys, encodings, rollups) the history goes through it.
 * Shaped like a team's Claude Code fleet: sessions of about 200 hook executions, users in teams (the `team`
 * dimension), a few dozen hooks of which some run near or over the 10,000 cap, a few client versions of which the
 * oldest sends no sizes. Deterministic for a seed, so two backends (or two runs) hold the same events.
 */
import { createHash } from 'node:crypto';
import { hookId } from '../../src/hooks/extract.ts';
import { classifyExecution } from '../../src/hooks/cliff.ts';
import type { HookEvent } from '../../src/hooks/model.ts';
import type { Store } from '../../src/store/store.ts';

export interface HistoryShape {
  /** Hook executions in all. */
  events: number;
  fromMs: number;
  toMs: number;
  hooks?: number;
  users?: number;
  /** Teams (dimension `team`: `team-0`...), each user in one. */
  teams?: number;
  /** Executions per session on average (each session is 50% to 150% of it). */
  sessionEvents?: number;
  seed?: number;
}

/** Client versions, newest first; the last one predates size data (2.1.280). */
export const HISTORY_VERSIONS = ['2.1.332', '2.1.310', '2.1.290', '2.1.279'] as const;
const VERSION_SHARE = [0.55, 0.25, 0.12, 0.08];
const HOOK_EVENTS = ['PreToolUse', 'PostToolUse', 'UserPromptSubmit', 'SessionStart', 'Stop', 'Notification'];

/** A small fast PRNG (mulberry32): the same seed gives the same history. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const hex = (rnd: () => number, n: number): string => Array.from({ length: n }, () => Math.floor(rnd() * 16).toString(16)).join('');
const uuid = (rnd: () => number): string => { const h = hex(rnd, 32); return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`; };

/** The hooks of the history: name, hookId and the typical output size of each (a few near or over the cap). */
export function historyHooks(count = 60): { hookEvent: string; hookName: string; id: string; size: number }[] {
  const rnd = random(7);
  return Array.from({ length: count }, (_, i) => {
    const hookEvent = HOOK_EVENTS[i % HOOK_EVENTS.length] as string;
    const hookName = `${hookEvent}:hook-${i}`;
    // Most outputs small; one hook in ten near the cap, one in twenty over it.
    const size = i % 20 === 7 ? 10_500 + Math.floor(rnd() * 3000) : i % 10 === 3 ? 8500 + Math.floor(rnd() * 1400) : Math.floor(rnd() * 4000);
    return { hookEvent, hookName, id: hookId(hookEvent, hookName), size };
  });
}

/**
 * The history in batches of `batchSize` events, session by session in order of session start (so, like a live
 * feed, each batch holds about the same half hour of a few sessions).
 */
export function* historyBatches(shape: HistoryShape, batchSize = 5000): Generator<HookEvent[]> {
  const { events, fromMs, toMs } = shape;
  const users = shape.users ?? 500;
  const teams = shape.teams ?? 8;
  const perSession = shape.sessionEvents ?? 200;
  const rnd = random(shape.seed ?? 1);
  const hooks = historyHooks(shape.hooks ?? 60);
  const people = Array.from({ length: users }, (_, u) => ({
    id: hex(rnd, 64), email: `hmac:${hex(rnd, 32)}`, account: uuid(rnd), team: `team-${u % teams}`,
  }));
  const org = uuid(rnd);
  const sessions: { start: number; size: number }[] = [];
  for (let left = events; left > 0;) {
    const size = Math.min(left, Math.max(1, Math.round(perSession * (0.5 + rnd()))));
    sessions.push({ start: fromMs + rnd() * Math.max(1, toMs - fromMs - size * 10_000), size });
    left -= size;
  }
  sessions.sort((a, b) => a.start - b.start);
  let batch: HookEvent[] = [];
  for (const s of sessions) {
    const person = people[Math.floor(rnd() ** 1.5 * users)] as (typeof people)[number];
    const pick = rnd();
    let v = 0;
    for (let acc = VERSION_SHARE[0] as number; pick > acc && v < VERSION_SHARE.length - 1; acc += VERSION_SHARE[++v] as number);
    const version = HISTORY_VERSIONS[v] as string;
    const sized = v < HISTORY_VERSIONS.length - 1;
    const sessionId = uuid(rnd);
    // A session uses a handful of the hooks, the popular ones most.
    const own = Array.from({ length: 6 }, () => hooks[Math.floor(rnd() ** 2 * hooks.length)] as (typeof hooks)[number]);
    let t = Math.floor(s.start);
    for (let seq = 0; seq < s.size; seq++) {
      t += 500 + Math.floor(rnd() * 9000);
      if (t >= toMs) t = toMs - 1;
      const h = own[Math.floor(rnd() * own.length)] as (typeof hooks)[number];
      const size = sized ? Math.max(0, Math.round(h.size * (0.8 + rnd() * 0.4))) : null;
      const persisted = size === null ? null : size > 10_000 ? 1 : 0;
      const facts = { numHooks: 1, stdoutChars: size, additionalContextChars: size === null ? null : Math.floor(size / 3), systemMessageChars: sized ? 0 : null, initialUserMessageChars: sized ? 0 : null, outputsPersisted: persisted };
      const ts = new Date(t).toISOString();
      const hash = createHash('sha1').update(`k|complete|${sessionId}|${seq}|${ts}|${h.hookName}`).digest('base64url');
      batch.push({
        kind: 'complete',
        dedupKey: t.toString(36).padStart(9, '0') + hash,
        legacyKey: hash,
        hookId: h.id,
        hookEvent: h.hookEvent,
        hookName: h.hookName,
        timeMs: t,
        receivedMs: t + 200,
        numSuccess: 1,
        numBlocking: 0,
        numNonBlockingError: 0,
        numCancelled: 0,
        durationMs: 20 + Math.floor(rnd() * 400),
        ...facts,
        sizesKnown: sized,
        status: classifyExecution(facts, 8000),
        serviceName: 'claude-code',
        serviceVersion: version,
        sessionId,
        userId: person.id,
        userEmail: person.email,
        userAccountUuid: person.account,
        organizationId: org,
        terminalType: 'vscode',
        source: 'otlp',
        extra: { team: person.team },
      });
      if (batch.length >= batchSize) {
        yield batch;
        batch = [];
      }
    }
  }
  if (batch.length > 0) yield batch;
}

/** Ingests the history into a store through its own ingest(), `inFlight` batches at a time; returns the events stored. */
export async function loadHistory(store: Store, shape: HistoryShape, opts: { batchSize?: number; inFlight?: number; onProgress?: (stored: number) => void } = {}): Promise<number> {
  let stored = 0;
  const running = new Set<Promise<void>>();
  for (const batch of historyBatches(shape, opts.batchSize ?? 5000)) {
    const p: Promise<void> = store.ingest(batch).then((r) => {
      stored += r.inserted.length;
      opts.onProgress?.(stored);
    }).finally(() => running.delete(p));
    running.add(p);
    if (running.size >= (opts.inFlight ?? 2)) await Promise.race(running);
  }
  await Promise.all(running);
  return stored;
}
