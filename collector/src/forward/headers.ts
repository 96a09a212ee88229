/**
 * Downstream headers (`forward.headers`): a mapping in the config file, or `k=v,k2=v2` in the environment like
 * OTEL_EXPORTER_OTLP_HEADERS (values URL-decoded). They usually carry an API key, so messages about them
 * name the header, never its value.
 */

const NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Parses the setting into a header map, or returns a message naming what is wrong. */
export function parseForwardHeaders(raw: unknown): Record<string, string> | string {
  const out: Record<string, string> = {};
  if (raw === '' || raw === null || raw === undefined) return out;
  if (typeof raw === 'string') {
    for (const part of raw.split(',')) {
      if (!part.trim()) continue;
      const eq = part.indexOf('=');
      if (eq <= 0) return `expected name=value pairs separated by commas (entry ${JSON.stringify(part.slice(0, Math.max(eq, 0)) || 'without a name')} has no "=")`;
      const name = part.slice(0, eq).trim();
      let value: string;
      try {
        value = decodeURIComponent(part.slice(eq + 1).trim());
      } catch {
        return `the value of header ${JSON.stringify(name)} is not valid percent-encoding`;
      }
      if (!NAME.test(name)) return `${JSON.stringify(name)} is not a valid header name`;
      out[name.toLowerCase()] = value;
    }
    return out;
  }
  if (typeof raw !== 'object' || Array.isArray(raw)) return 'expected a mapping of header names to values, or name=value,name2=value2';
  for (const [name, value] of Object.entries(raw as Record<string, unknown>)) {
    if (!NAME.test(name)) return `${JSON.stringify(name)} is not a valid header name`;
    if (typeof value !== 'string' && typeof value !== 'number') return `the value of header ${JSON.stringify(name)} must be a string`;
    if (/[\r\n]/.test(String(value))) return `the value of header ${JSON.stringify(name)} contains a line break`;
    out[name.toLowerCase()] = String(value);
  }
  return out;
}
