/**
 * Standard Webhooks 1.0 signing: `webhook-signature: v1,<base64 HMAC-SHA256(secret, "{id}.{timestamp}.{body}")>`,
 * with the secret given as `whsec_<base64>` (the bytes after the prefix are the key).
 */
import { createHmac } from 'node:crypto';
import { SIGNING_SECRET_PREFIX as PREFIX } from './settings.ts';

/** The key bytes of a `whsec_<base64>` secret. */
export function signingKey(secret: string): Buffer {
  return Buffer.from(secret.slice(PREFIX.length), 'base64');
}

/** The three Standard Webhooks headers for one attempt; `timestampSec` is unix seconds. */
export function signHeaders(secret: string, webhookId: string, timestampSec: number, body: string): Record<string, string> {
  const mac = createHmac('sha256', signingKey(secret)).update(`${webhookId}.${timestampSec}.${body}`).digest('base64');
  return { 'webhook-id': webhookId, 'webhook-timestamp': String(timestampSec), 'webhook-signature': `v1,${mac}` };
}
