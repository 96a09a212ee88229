/**
 * A network error in the words a person reads, its code kept in them: `connection refused (ECONNREFUSED): nothing
 * listens at alerts.example.com:443`. Where it happened is a host and port only, never a URL (its path or query
 * may hold a token). Shared by what writes the error (notification attempts, the forwarder) and the dashboard,
 * which says a code stored bare, before these words, the same way.
 */

/** Words for each code, given where (host:port) when known. A Map: a code such as `constructor` finds nothing. */
const WORDS = new Map(Object.entries<(where: string | undefined) => string>({
  ECONNREFUSED: (w) => `connection refused (ECONNREFUSED): nothing listens at ${w ?? 'that address'}`,
  ENOTFOUND: (w) => `name not found (ENOTFOUND): no address for ${w ? hostOf(w) : 'that host name'}`,
  EAI_AGAIN: (w) => `name lookup failed (EAI_AGAIN): no answer from DNS for ${w ? hostOf(w) : 'that host name'}`,
  ECONNRESET: (w) => `connection reset (ECONNRESET) by ${w ?? 'the other end'}`,
  EPIPE: (w) => `connection closed while sending (EPIPE) by ${w ?? 'the other end'}`,
  ECONNABORTED: (w) => `connection aborted (ECONNABORTED) with ${w ?? 'the other end'}`,
  EHOSTUNREACH: (w) => `host unreachable (EHOSTUNREACH): no route to ${w ?? 'that address'}`,
  ENETUNREACH: (w) => `network unreachable (ENETUNREACH): no route to ${w ?? 'that address'}`,
  ETIMEDOUT: (w) => `connection timed out (ETIMEDOUT): no answer from ${w ?? 'that address'}`,
  UND_ERR_SOCKET: (w) => `connection closed before the answer (UND_ERR_SOCKET) by ${w ?? 'the other end'}`,
  UND_ERR_CONNECT_TIMEOUT: (w) => `timed out connecting (UND_ERR_CONNECT_TIMEOUT) to ${w ?? 'that address'}`,
  UND_ERR_HEADERS_TIMEOUT: (w) => `timed out waiting for the answer (UND_ERR_HEADERS_TIMEOUT) from ${w ?? 'that address'}`,
  UND_ERR_BODY_TIMEOUT: (w) => `timed out reading the answer (UND_ERR_BODY_TIMEOUT) from ${w ?? 'that address'}`,
  UND_ERR_HEADERS_OVERFLOW: (w) => `answer's headers too large to read (UND_ERR_HEADERS_OVERFLOW)${w ? ` from ${w}` : ''}`,
}));

const hostOf = (where: string): string => where.replace(/:\d+$/, '');

/** `host:port` of a URL, the scheme's port when it names none; undefined when it does not parse. */
export function hostPort(url: string): string | undefined {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || (u.protocol === 'https:' || u.protocol === 'grpcs:' ? '443' : '80')}`;
  } catch {
    return undefined;
  }
}

/** A code in words (with the code), or undefined for a code these do not know. `where`: host:port. */
export function networkErrorWords(code: string, where?: string): string | undefined {
  return WORDS.get(code)?.(where);
}

/** An attempt that had no answer within `timeoutMs`: `timed out after 10 s: no answer from host:port`. */
export function timedOutWords(timeoutMs: number, where?: string): string {
  const after = timeoutMs % 1000 === 0 ? `${timeoutMs / 1000} s` : `${timeoutMs} ms`;
  return `timed out after ${after}${where ? `: no answer from ${where}` : ''}`;
}

/**
 * The code an error's text names, in words (`connection refused (ECONNREFUSED): ...`) or bare, as stored before
 * (`ECONNREFUSED`); undefined for any other text.
 */
export function networkErrorCode(text: string): string | undefined {
  if (WORDS.has(text)) return text;
  const m = /^[^(]*\(([A-Z][A-Z0-9_]*)\)/.exec(text);
  return m?.[1] && WORDS.has(m[1]) ? m[1] : undefined;
}

/**
 * An error as stored, for reading: a code stored bare (`ECONNREFUSED`, `ECONNREFUSED; gave up: ...`) in words,
 * where it happened unknown; any other text as it is.
 */
export function readableError(text: string): string {
  const cut = text.indexOf(';');
  const head = cut < 0 ? text : text.slice(0, cut);
  const words = networkErrorWords(head);
  return words === undefined ? text : words + (cut < 0 ? '' : text.slice(cut));
}
