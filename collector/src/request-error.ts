/**
 * A value in a request that cannot be accepted. Every API answers it 400 `bad_parameter`, naming the parameter
 * (a query parameter, a path segment or a body field), so a client can point at what to fix. The name is the
 * client's own for a parameter a route does not take: cut as `echoed` cuts it in the message.
 */
export class BadParameterError extends Error {
  override name = 'BadParameterError';
  readonly parameter: string;
  constructor(parameter: string, message: string) {
    super(message);
    this.parameter = cut(parameter);
  }
}

/** A request body that cannot be read (it does not decode, say). Every API answers it 400 `bad_body`. */
export class BadBodyError extends Error {
  override name = 'BadBodyError';
}

/** The most of a client's value a refusal repeats. */
const ECHO_CHARS = 64;

/**
 * A client's value as a refusal repeats it: quoted as JSON, at most ECHO_CHARS characters of it, and an ellipsis
 * inside the quotes when it was cut (never between the two halves of an emoji). A path or header of 16 KiB is not
 * sent back whole.
 */
export function echoed(value: string): string {
  return JSON.stringify(cut(value));
}

/** At most `max` (ECHO_CHARS) characters of `value`, an ellipsis after them when it was cut (never inside an emoji). */
export function cut(value: string, max = ECHO_CHARS): string {
  if (value.length <= max) return value;
  const code = value.charCodeAt(max - 1);
  const end = code >= 0xd800 && code <= 0xdbff ? max - 1 : max;
  return `${value.slice(0, end)}…`;
}
