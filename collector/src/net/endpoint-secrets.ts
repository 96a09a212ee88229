/**
 * An endpoint's secrets kept out of text written about it. Apart from otlp-url.ts, which the guard and the scan
 * tools load: they must not load the configuration's modules.
 */
import { MIN_SECRET_CHARS, headerSecrets, urlPasswords } from '../config/values.ts';
import { safeEndpoint } from './otlp-url.ts';

/**
 * Removes an endpoint's secrets from text written about it (an SDK's message, a destination's answer, which may
 * repeat the key or the URL it was sent): `urls` (the URLs requests go to) and the endpoint written without their
 * credentials and query, and the values of its credentials, query parameters and headers (and the credential of a
 * Basic or Bearer one on its own) wherever they appear.
 */
export function secretScrubber(endpoint: string, headers: Record<string, string>, urls: readonly string[] = []): (text: string) => string {
  const shown = [...new Set([...urls, endpoint])].filter((u) => u !== safeEndpoint(u)).sort((a, b) => b.length - a.length);
  // The whole query goes from the endpoint as logged (safeEndpoint), so each of its values does from the text.
  const values = [...headerSecrets(headers), ...urlPasswords(endpoint)];
  if (URL.canParse(endpoint)) {
    const url = new URL(endpoint);
    values.push(url.username, url.search.slice(1), ...url.searchParams.values(), ...[...url.search.matchAll(/=([^&#]+)/g)].map((m) => m[1] ?? ''));
  }
  const secrets = [...new Set(values.filter((v) => v.length >= MIN_SECRET_CHARS))].sort((a, b) => b.length - a.length);
  return (text) => {
    let out = text;
    for (const u of shown) out = out.split(u).join(safeEndpoint(u));
    for (const v of secrets) out = out.split(v).join('<redacted>');
    return out;
  };
}
