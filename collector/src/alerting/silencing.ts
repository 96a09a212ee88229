/**
 * The silences in force, as Alertmanager's silence store keeps them: created and expired through the API (on
 * any replica), written to the state store before they count, and asked which alerts they mute. Matching and
 * request validation are in silences.ts.
 */
import type { Silence, SilenceState } from '../../../shared/src/api.ts';
import type { SilenceRecord } from './model.ts';
import { silenceMatches, silenceState, toSilence } from './silences.ts';
import type { AlertStateStore } from './state/store.ts';

/** Silences not yet expired that may be held at once (Alertmanager's --silences.max-silences); each is matched against every alert. */
export const MAX_SILENCES = 1000;

/** A place in the silences' order (newest first, then by id): the creation time and id of the silence there. */
export interface SilencePosition {
  createdAtMs: number;
  id: string;
}

function newestFirst(a: SilencePosition, b: SilencePosition): number {
  return b.createdAtMs - a.createdAtMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** A new silence past MAX_SILENCES. */
export class SilenceLimitError extends Error {
  override name = 'SilenceLimitError';
}

export interface SilencesOptions {
  store: Pick<AlertStateStore, 'putSilence' | 'silences'>;
  now: () => number;
  /** A silence was expired early: its alerts, if still firing, are due a notification now. */
  onExpired?: () => void;
}

export class Silences {
  private readonly opts: SilencesOptions;
  private readonly byId = new Map<string, SilenceRecord>();

  constructor(opts: SilencesOptions) {
    this.opts = opts;
  }

  /** Replaces the silences held with these (a load from the state store). */
  replace(list: readonly SilenceRecord[]): void {
    this.byId.clear();
    for (const s of list) this.byId.set(s.id, s);
  }

  /** Reads them again from the state store (shared state: created on another replica). */
  async reload(): Promise<void> {
    this.replace(await this.opts.store.silences());
  }

  /** Newest first, in the API's shape; only those in `states` when given. */
  list(states?: ReadonlySet<SilenceState>): Silence[] {
    return this.page(states, Infinity).silences;
  }

  /**
   * Up to `limit` of list()'s silences, those after `after` (where the previous page ended), with the count of
   * all in `states` and where this page ends when more follow. A position, not an offset: a silence created or
   * expired between two pages does not make the next one repeat or skip another.
   */
  page(states: ReadonlySet<SilenceState> | undefined, limit: number, after?: SilencePosition): { silences: Silence[]; total: number; next: SilencePosition | null } {
    const now = this.opts.now();
    const held = [...this.byId.values()].filter((s) => states === undefined || states.has(silenceState(s, now))).sort(newestFirst);
    const start = after === undefined ? 0 : held.findIndex((s) => newestFirst(s, after) > 0);
    const page = start < 0 ? [] : held.slice(start, start + limit);
    const last = page.at(-1);
    const next = last !== undefined && start + page.length < held.length ? { createdAtMs: last.createdAtMs, id: last.id } : null;
    return { silences: page.map((s) => toSilence(s, now)), total: held.length, next };
  }

  /** Saves a new silence (validated by parseSilence); it mutes from the next evaluation on. */
  async add(s: SilenceRecord): Promise<Silence> {
    const now = this.opts.now();
    let live = 0;
    for (const x of this.byId.values()) if (x.endsAtMs > now) live++;
    if (live >= MAX_SILENCES) throw new SilenceLimitError(`${live} silences have not expired yet, the most hookwatch holds (${MAX_SILENCES}): expire some (DELETE /api/v1/silences/:id) before creating more`);
    await this.opts.store.putSilence(s);
    this.byId.set(s.id, s);
    return toSilence(s, this.opts.now());
  }

  /** Expires a silence now (Alertmanager's DELETE); undefined when there is none with this id. */
  async expire(id: string): Promise<Silence | undefined> {
    const s = this.byId.get(id);
    if (!s) return undefined;
    const now = this.opts.now();
    let current = s;
    if (s.endsAtMs > now) {
      current = { ...s, endsAtMs: now, startsAtMs: Math.min(s.startsAtMs, now) };
      await this.opts.store.putSilence(current);
      this.byId.set(id, current);
      this.opts.onExpired?.();
    }
    return toSilence(current, now);
  }

  /** Ids of the silences muting an alert with these labels at `now`. */
  mutedBy(labels: Record<string, string>, now: number): string[] {
    const ids: string[] = [];
    for (const s of this.byId.values()) if (silenceState(s, now) === 'active' && silenceMatches(s, labels)) ids.push(s.id);
    return ids;
  }

  /** Forgets silences that expired before `beforeMs` (the state store prunes its copy in the same evaluation). */
  forgetExpiredBefore(beforeMs: number): void {
    for (const [id, s] of this.byId) if (s.endsAtMs < beforeMs) this.byId.delete(id);
  }
}
