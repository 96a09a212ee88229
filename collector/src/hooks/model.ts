/** A hook event as hookwatch stores it: one hook_execution_complete (an execution) or hook_execution_start. */
import type { DeliveryStatus } from '../../../shared/src/cliff.ts';

export type HookEventKind = 'complete' | 'start';

/** Where the event came from: Claude Code's telemetry, or a transcript scan (`hookwatch scan --send`). */
export type EventSource = 'otlp' | 'transcript';

export interface HookEvent {
  kind: HookEventKind;
  /** Idempotency key: a retried batch maps to the same keys and is not counted twice. */
  dedupKey: string;
  /**
   * The key the same event had before keys began with the event time (the bare hash). Stores look for it
   * among events stored before that change, so a retry or a repeated transcript import is not counted twice.
   */
  legacyKey?: string;
  hookId: string;
  hookEvent: string;
  hookName: string;
  /** Event time in ms since the epoch. */
  timeMs: number;
  /** When hookwatch received it (ms since the epoch); alerts on late persisted outputs window by it. */
  receivedMs?: number;
  numHooks: number | null;
  numSuccess: number | null;
  numBlocking: number | null;
  numNonBlockingError: number | null;
  numCancelled: number | null;
  durationMs: number | null;
  /** Size attributes (2.1.280+): sums over num_hooks commands; null when absent (unknown, never 0). */
  stdoutChars: number | null;
  additionalContextChars: number | null;
  systemMessageChars: number | null;
  initialUserMessageChars: number | null;
  outputsPersisted: number | null;
  /** True when the event carried any size attribute. */
  sizesKnown: boolean;
  status: DeliveryStatus;
  serviceName: string;
  serviceVersion: string;
  sessionId: string;
  userId: string;
  userEmail: string;
  userAccountUuid: string;
  organizationId: string;
  terminalType: string;
  source: EventSource;
  /** Configured extra dimensions (e.g. team), by attribute key. */
  extra: Record<string, string>;
}

/** The built-in dimensions usable as API filters, by their attribute names. */
export const BUILTIN_DIMENSIONS = {
  'service.name': 'serviceName',
  'service.version': 'serviceVersion',
  'session.id': 'sessionId',
  'user.id': 'userId',
  'user.email': 'userEmail',
  'user.account_uuid': 'userAccountUuid',
  'organization.id': 'organizationId',
  'terminal.type': 'terminalType',
  'hookwatch.source': 'source',
} as const satisfies Record<string, keyof HookEvent>;

export type BuiltinDimension = keyof typeof BUILTIN_DIMENSIONS;

/** Suffix of an overflow hook's name (Claude Code names hooks `<event>:<matcher>`; store/hook-limit.ts). */
export const OVERFLOW_SUFFIX = ':(overflow)';

/** The overflow hook's name for a hook event: where store.maxHooks counts the events of new hook names. */
export function overflowHookName(hookEvent: string): string {
  return `${hookEvent}${OVERFLOW_SUFFIX}`;
}

/**
 * True for the hooks that hold the events of names past store.maxHooks: a hook named its event's overflow name,
 * which ingest refuses from clients. Another name ending in the suffix (another event's, another case) is a hook
 * like any other.
 */
export function isOverflowHook(info: { hookEvent: string; hookName: string }): boolean {
  // Compared in place, without building the name: ingest asks this of every hook record.
  const { hookEvent, hookName } = info;
  return hookName.length === hookEvent.length + OVERFLOW_SUFFIX.length && hookName.endsWith(OVERFLOW_SUFFIX) && hookName.startsWith(hookEvent);
}
