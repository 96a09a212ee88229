/**
 * Comparing a presented secret (a bearer token, basic credentials) with the configured one in constant time:
 * both sides are SHA-256 digests of the same length, so the time taken says nothing about where or how long a
 * wrong secret is.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

export function secretDigest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

/**
 * The credentials of an Authorization header in `scheme` (lower case), or undefined: the scheme is matched in any
 * case, as RFC 9110 (11.1) has it (`bearer x` is `Bearer x`).
 */
export function authCredentials(header: string | undefined, scheme: string): string | undefined {
  if (!header) return undefined;
  const m = /^(\S+)\s+(.*)$/.exec(header.trim());
  if (!m || (m[1] as string).toLowerCase() !== scheme) return undefined;
  return (m[2] as string).trim();
}

/** True when `given` is the secret whose digest is `expected`. */
export function sameSecret(given: string, expected: Buffer): boolean {
  return timingSafeEqual(secretDigest(given), expected);
}
