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

/**
 * The request's Authorization header when it carries exactly one; undefined when it carries none or several. Node
 * keeps the first of repeated ones, while a proxy in front may act on the last: a request that names two sets of
 * credentials is refused whichever one is right.
 */
export function onlyAuthorization(req: { headers: { authorization?: string | undefined }; rawHeaders: string[] }): string | undefined {
  let n = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) if ((req.rawHeaders[i] as string).toLowerCase() === 'authorization') n++;
  return n === 1 ? req.headers.authorization : undefined;
}

/** True when `given` is the secret whose digest is `expected`. */
export function sameSecret(given: string, expected: Buffer): boolean {
  return timingSafeEqual(secretDigest(given), expected);
}
