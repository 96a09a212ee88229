/**
 * Comparing a presented secret (a bearer token, basic credentials) with the configured one in constant time:
 * both sides are SHA-256 digests of the same length, so the time taken says nothing about where or how long a
 * wrong secret is.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

export function secretDigest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

/** True when `given` is the secret whose digest is `expected`. */
export function sameSecret(given: string, expected: Buffer): boolean {
  return timingSafeEqual(secretDigest(given), expected);
}
