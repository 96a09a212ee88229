/**
 * The alerts held in memory: pending and firing ones per rule by fingerprint (what the next evaluation steps
 * from), and recently resolved ones by id (listed until retention forgets them). The engine writes it, the read
 * model reads it; the state store is where it survives restarts.
 */
import type { AlertRecord } from './model.ts';

/**
 * The active alerts of one rule by fingerprint, which also keep `byId`, the active alerts of every rule by id, as
 * lifecycle.stepRule adds and deletes them (a delivery looks its alert up by id, a burst of them one each).
 */
class ActiveOfRule extends Map<string, AlertRecord> {
  private readonly byId: Map<string, AlertRecord>;

  constructor(byId: Map<string, AlertRecord>) {
    super();
    this.byId = byId;
  }

  override set(fp: string, a: AlertRecord): this {
    this.forget(super.get(fp));
    this.byId.set(a.id, a);
    return super.set(fp, a);
  }

  override delete(fp: string): boolean {
    this.forget(super.get(fp));
    return super.delete(fp);
  }

  override clear(): void {
    for (const a of this.values()) this.forget(a);
    super.clear();
  }

  private forget(a: AlertRecord | undefined): void {
    if (a && this.byId.get(a.id) === a) this.byId.delete(a.id);
  }
}

export class AlertSet {
  /** Pending and firing alerts, per rule name, by fingerprint. */
  private readonly active = new Map<string, ActiveOfRule>();
  /** The same alerts by id. */
  private readonly activeById = new Map<string, AlertRecord>();
  private readonly resolved = new Map<string, AlertRecord>();

  /** Replaces everything with these records (a load from the state store). */
  replace(records: readonly AlertRecord[]): void {
    this.active.clear();
    this.activeById.clear();
    this.resolved.clear();
    for (const a of records) {
      if (a.state === 'resolved') this.resolved.set(a.id, a);
      else this.activeOf(a.rule).set(a.fingerprint, a);
    }
  }

  /** The active alerts of one rule, by fingerprint: the map lifecycle.stepRule steps (and mutates). */
  activeOf(rule: string): Map<string, AlertRecord> {
    let m = this.active.get(rule);
    if (!m) {
      m = new ActiveOfRule(this.activeById);
      this.active.set(rule, m);
    }
    return m;
  }

  /** Names of the rules that hold active alerts. */
  activeRules(): string[] {
    return [...this.active].filter(([, m]) => m.size > 0).map(([name]) => name);
  }

  /** Pending and firing alerts, of every rule. */
  activeAlerts(): AlertRecord[] {
    return [...this.active.values()].flatMap((m) => [...m.values()]);
  }

  resolvedAlerts(): AlertRecord[] {
    return [...this.resolved.values()];
  }

  /** Records an alert that resolved in this evaluation (stepRule has already taken it out of the active map). */
  addResolved(a: AlertRecord): void {
    this.resolved.set(a.id, a);
  }

  /** Forgets resolved alerts that ended before `beforeMs`; returns their ids (for the state store to delete). */
  forgetResolvedBefore(beforeMs: number, now: number): string[] {
    const ids: string[] = [];
    for (const [id, a] of this.resolved) {
      if ((a.endsAtMs ?? now) < beforeMs) {
        this.resolved.delete(id);
        ids.push(id);
      }
    }
    return ids;
  }

  /** One alert by id, active or resolved. */
  get(id: string): AlertRecord | undefined {
    return this.resolved.get(id) ?? this.activeById.get(id);
  }
}
