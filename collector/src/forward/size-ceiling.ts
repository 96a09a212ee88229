/**
 * The size a destination refused merged requests at (HTTP 413, gRPC RESOURCE_EXHAUSTED without RetryInfo), kept
 * so that merged attempts do not grow back to it: halving after a refusal and doubling after quick successes
 * would otherwise have about every other attempt of a backlog refused again. Below the refused size, attempts
 * probe halfway between the largest size taken and the refused one, until the two are within a quarter of each
 * other; after that they stay at the size taken (at least three quarters of what gets through). A ceiling is
 * kept for CEILING_MS after its last refusal; then attempts may reach the refused size again: the first one taken at
 * that size or above lifts it (a proxy's limit raised), one refused keeps it for as long again. (Held to the
 * refused size, an attempt of whole requests would seldom add up to exactly it, and the ceiling would stay.)
 */

/** How long a refused size is kept from the last refusal at it: a limit is configuration, which seldom changes. */
export const CEILING_MS = 10 * 60_000;

export class SizeCeiling {
  /** The smallest merged size refused as too large; undefined when none is known. */
  private refusedBytes: number | undefined;
  private refusedAtMs = 0;
  /** The largest size taken since the ceiling was set. */
  private takenBytes = 0;
  private readonly now: () => number;

  constructor(now: () => number) {
    this.now = now;
  }

  /** The most bytes the next merged attempt may carry, within `maxBytes`. */
  allowance(maxBytes: number): number {
    const refused = this.refusedBytes;
    if (refused === undefined) return maxBytes;
    // Kept long enough: the next attempts, merged as they come, find out whether the limit is still there.
    if (this.now() - this.refusedAtMs >= CEILING_MS) return maxBytes;
    const gap = refused - this.takenBytes;
    return Math.min(maxBytes, gap * 4 <= refused ? this.takenBytes : this.takenBytes + Math.floor(gap / 2));
  }

  /** An attempt of `bytes` was refused as too large. */
  refused(bytes: number): void {
    if (this.refusedBytes === undefined || bytes < this.refusedBytes) this.refusedBytes = bytes;
    // A limit lowered since: what it took before says nothing.
    if (this.takenBytes >= this.refusedBytes) this.takenBytes = 0;
    this.refusedAtMs = this.now();
  }

  /** An attempt of `bytes` was taken. */
  taken(bytes: number): void {
    if (this.refusedBytes === undefined) return;
    if (bytes >= this.refusedBytes) {
      // The refused size gets through now: the limit was raised.
      this.refusedBytes = undefined;
      this.takenBytes = 0;
      return;
    }
    this.takenBytes = Math.max(this.takenBytes, bytes);
  }

  /** The refused size in force, for the log; undefined when none is. */
  get ceiling(): number | undefined {
    return this.refusedBytes;
  }
}
