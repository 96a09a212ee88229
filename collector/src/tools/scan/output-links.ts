import { createHash } from 'node:crypto';

import { OUTPUT_CAP_CHARS } from '../../../../shared/src/cliff.ts';
import type { OutputKind } from '../../../../shared/src/cliff.ts';
import type { PersistedOutput } from './persisted-marker.ts';

/**
 * A string inside a hook command's JSON stdout (additionalContext, systemMessage, initialUserMessage) whose
 * delivery Claude Code records later, in a `hook_additional_context` or `hook_system_message` record. Only a
 * digest of the text is kept, so memory does not grow with output sizes.
 */
export interface PendingOutput {
  runId: string;
  sessionId: string;
  hookName: string;
  hookEvent: string;
  toolUseId: string | undefined;
  command: string | undefined;
  kind: OutputKind;
  chars: number;
  digest: string;
  timestamp: string | undefined;
}

/** Most JSON outputs awaiting their delivery record per file; past it the oldest are given up as unconfirmed. */
export const MAX_PENDING_OUTPUTS = 10_000;

/** A short digest of an output string, for matching it against the text a later record delivered. */
export function digestOf(text: string): string {
  return createHash('sha1').update(text).digest('base64url');
}

/**
 * The length a marker's label ("11.7KB", "980B", "1.2MB") stands for, in UTF-16 code units as the output's `chars`
 * count them; undefined when unreadable. Claude Code 2.1.332 labels an output with its string length, not its
 * bytes, over 1,024 and rounded to one decimal: 10,002 code units of emoji (20,004 bytes) read "9.8KB", 10,500
 * characters "10.3KB", 12,000 "11.7KB" (the real transcripts and the telemetry of the same sessions). So the label
 * is within about 51 code units of the length.
 */
export function labelChars(label: string | undefined): number | undefined {
  const match = label === undefined ? null : /^([\d.]+)\s*(B|KB|MB|GB)$/i.exec(label.trim());
  if (!match) return undefined;
  const scale = { B: 1, KB: 1024, MB: 1024 ** 2, GB: 1024 ** 3 }[match[2]!.toUpperCase() as 'B' | 'KB' | 'MB' | 'GB'];
  return Number(match[1]) * scale;
}

/** Where a delivery record says its strings came from. */
export interface DeliveryRecordKeys {
  sessionId: string;
  hookEvent: string;
  toolUseId: string | undefined;
  kind: OutputKind;
}

/**
 * JSON outputs of the hook commands of one transcript file, waiting to be matched with the records that say
 * whether each was delivered or persisted. Claude Code 2.1.332 gives a tool event's delivery record the tool
 * call's id (as on the command's `hook_success`), but a SessionStart delivery record the bare event name as its
 * id and as its hook name; so a record is matched by id first and by event second, and each string by its text
 * (delivered) or by the saved file and the size its marker gives (persisted).
 */
export class PendingOutputs {
  /** Waiting entries in the order they came (a Set keeps it, and drops one in constant time). */
  private readonly entries = new Set<PendingOutput>();
  /**
   * The same entries by what a delivery record looks them up by, each in the order they came: the text's digest
   * (a delivered string), over the cap (a persisted one). Without them every record searched every waiting entry,
   * quadratic in a transcript whose strings go unconfirmed.
   */
  private readonly byDigest = new Map<string, Set<PendingOutput>>();
  private readonly overCap = new Map<string, Set<PendingOutput>>();
  /** Entries given up because too many were waiting. */
  evicted: PendingOutput[] = [];

  add(entry: PendingOutput): void {
    this.entries.add(entry);
    addTo(this.byDigest, digestKey(entry.sessionId, entry.kind, entry.digest), entry);
    if (entry.chars > OUTPUT_CAP_CHARS) addTo(this.overCap, groupKey(entry.sessionId, entry.kind), entry);
    if (this.entries.size > MAX_PENDING_OUTPUTS) {
      const oldest = this.entries.values().next().value!;
      this.remove(oldest);
      this.evicted.push(oldest);
    }
  }

  /** Claims the command output a delivered string came from (same text), or undefined. */
  claimDelivered(keys: DeliveryRecordKeys, text: string): PendingOutput | undefined {
    const digest = digestOf(text);
    const chosen = this.candidates(keys, this.byDigest.get(digestKey(keys.sessionId, keys.kind, digest))).find((entry) => entry.chars === text.length);
    if (chosen !== undefined) this.remove(chosen);
    return chosen;
  }

  /** Claims the command output a persisted-output marker stands for, or undefined. */
  claimPersisted(keys: DeliveryRecordKeys, marker: PersistedOutput): PendingOutput | undefined {
    // Claude Code names the saved file after the hook run's id: hook-<toolUseID>-<event>-<hash>-<field>.txt.
    const namesRun = (entry: PendingOutput): boolean => entry.toolUseId !== undefined && marker.savedPath !== undefined && marker.savedPath.includes(`hook-${entry.toolUseId}-`);
    const labelled = labelChars(marker.sizeLabel);
    const nearest = (candidates: PendingOutput[]): PendingOutput | undefined => {
      if (labelled === undefined) return candidates[0];
      return candidates.reduce<PendingOutput | undefined>((best, entry) => (best === undefined || Math.abs(entry.chars - labelled) < Math.abs(best.chars - labelled) ? entry : best), undefined);
    };
    const candidates = this.candidates(keys, this.overCap.get(groupKey(keys.sessionId, keys.kind)));
    const chosen = nearest(candidates.filter(namesRun)) ?? nearest(candidates);
    if (chosen !== undefined) this.remove(chosen);
    return chosen;
  }

  /** Gives up every entry (the end of a file): their delivery was never recorded. */
  drain(): PendingOutput[] {
    const left = [...this.evicted, ...this.entries];
    this.entries.clear();
    this.byDigest.clear();
    this.overCap.clear();
    this.evicted = [];
    return left;
  }

  /** Of entries of the same session and kind: those of the same tool call first, then those of the same event. */
  private candidates(keys: DeliveryRecordKeys, group: Set<PendingOutput> | undefined): PendingOutput[] {
    if (group === undefined) return [];
    const same = [...group];
    const byId = keys.toolUseId === undefined ? [] : same.filter((entry) => entry.toolUseId === keys.toolUseId);
    return [...byId, ...same.filter((entry) => entry.hookEvent === keys.hookEvent && !byId.includes(entry))];
  }

  private remove(entry: PendingOutput): void {
    this.entries.delete(entry);
    removeFrom(this.byDigest, digestKey(entry.sessionId, entry.kind, entry.digest), entry);
    if (entry.chars > OUTPUT_CAP_CHARS) removeFrom(this.overCap, groupKey(entry.sessionId, entry.kind), entry);
  }
}

const groupKey = (sessionId: string, kind: OutputKind): string => `${sessionId}\u0000${kind}`;
const digestKey = (sessionId: string, kind: OutputKind, digest: string): string => `${sessionId}\u0000${kind}\u0000${digest}`;

function addTo(index: Map<string, Set<PendingOutput>>, key: string, entry: PendingOutput): void {
  const group = index.get(key);
  if (group === undefined) index.set(key, new Set([entry]));
  else group.add(entry);
}

function removeFrom(index: Map<string, Set<PendingOutput>>, key: string, entry: PendingOutput): void {
  const group = index.get(key);
  if (group === undefined) return;
  group.delete(entry);
  if (group.size === 0) index.delete(key);
}
