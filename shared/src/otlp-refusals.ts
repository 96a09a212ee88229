/**
 * Reasons the OTLP receivers keep and list with their refusals that are none of hookwatch's: the request never
 * arrived whole, its client gave up on it (client_aborted) or it was not received within otlp.requestTimeout
 * (request_timeout). The receivers' log lines and the empty overview say them apart from the refusals.
 */
export const NOT_REFUSED_REASONS = ['client_aborted', 'request_timeout'] as const;
export type NotRefusedReason = (typeof NOT_REFUSED_REASONS)[number];

/** Whether a reason of `otlpRefusals` is one hookwatch did not refuse. */
export function isNotRefused(reason: string): reason is NotRefusedReason {
  return (NOT_REFUSED_REASONS as readonly string[]).includes(reason);
}
