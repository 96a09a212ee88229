/**
 * Standard Webhooks 1.0 signing: `webhook-signature: v1,<base64 HMAC-SHA256(secret, "{id}.{timestamp}.{body}")>`,
 * with the secret given as `whsec_<base64>` (the bytes after the prefix are the key).
 */
import { createHmac } from 'node:crypto';

const PREFIX = 'whsec_';

/** Why a signing secret is unusable, or undefined when it is a valid `whsec_<base64>` key. The secret is never echoed. */
export function signingSecretProblem(secret: string): string | undefined {
  if (!secret.startsWith(PREFIX)) return 'must start with whsec_ followed by a base64 key';
  const b64 = secret.slice(PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || b64.length % 4 !== 0) return 'the part after whsec_ must be base64';
  if (Buffer.from(b64, 'base64').length < 16) return 'the key must be at least 16 bytes';
  return undefined;
}

/** The key bytes of a `whsec_<base64>` secret. */
export function signingKey(secret: string): Buffer {
  return Buffer.from(secret.slice(PREFIX.length), 'base64');
}

/** The three Standard Webhooks headers for one attempt; `timestampSec` is unix seconds. */
export function signHeaders(secret: string, webhookId: string, timestampSec: number, body: string): Record<string, string> {
  const mac = createHmac('sha256', signingKey(secret)).update(`${webhookId}.${timestampSec}.${body}`).digest('base64');
  return { 'webhook-id': webhookId, 'webhook-timestamp': String(timestampSec), 'webhook-signature': `v1,${mac}` };
}
