/**
 * A value in a request that cannot be accepted. Every API answers it 400 `bad_parameter`, naming the parameter
 * (a query parameter, a path segment or a body field), so a client can point at what to fix.
 */
export class BadParameterError extends Error {
  override name = 'BadParameterError';
  readonly parameter: string;
  constructor(parameter: string, message: string) {
    super(message);
    this.parameter = parameter;
  }
}

/** A request body that cannot be read (it does not decode, say). Every API answers it 400 `bad_body`. */
export class BadBodyError extends Error {
  override name = 'BadBodyError';
}
