/**
 * OTLP/HTTP signal URLs from an endpoint, as OTEL_EXPORTER_OTLP_ENDPOINT is read; and an endpoint as logs and the
 * API may show it (forwarding's destination, the alert events' endpoint).
 */

export type OtlpSignal = 'logs' | 'metrics' | 'traces';

/**
 * `url` with `/v1/<signal>` after its path, its query kept (some vendors take an API key there) and its fragment
 * dropped. With `fullAllowed`, a path that already ends in `/v1/<signal>` (a signal's full URL) is kept as it is.
 */
export function otlpSignalUrl(url: URL, signal: OtlpSignal, opts: { fullAllowed?: boolean } = {}): string {
  const out = new URL(url);
  out.hash = '';
  const path = out.pathname.replace(/\/+$/, '');
  const tail = `/v1/${signal}`;
  out.pathname = opts.fullAllowed && path.endsWith(tail) ? path : `${path}${tail}`;
  return out.toString();
}

/** An endpoint's URL with any password, token or key query parameter removed, for logs and the API. */
export function safeEndpoint(endpoint: string): string {
  try {
    const url = new URL(endpoint);
    url.username = '';
    url.password = '';
    url.search = '';
    return url.toString().replace(/\/$/, '');
  } catch {
    return '<unparsable endpoint>';
  }
}

/**
 * Hides the password of every `scheme://user:password@` (and `https:user:password@`, as URL parsers read it) in a
 * text, whether the URL around it parses or not. The password runs to the last `@` of the authority, as URL parsers
 * read it, so an unencoded `@` in it hides all of it.
 */
export function redactUrlCredentials(text: string): string {
  // Past an '@' the password goes on only through text a host and port cannot hold (no , ; < > ( ) \), so an
  // address written after the URL ('...:4318,ops@corp.com') is not taken for part of it.
  // A special scheme (http, https, ws, wss, ftp) reads the authority after any number of / or \\, or none.
  return text.replace(/((?:[a-z][a-z0-9+.-]*:\/\/|\b(?:https?|wss?|ftp):[\\/]*)[^\s/\\?#@:'"]*):[^\s/?#@'"]*(?:@[^\s/?#@'"\\<>,;()]*)*@/gi, '$1:<redacted>@');
}
