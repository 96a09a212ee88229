/**
 * Sorting the HOOKWATCH_* environment into settings, Kubernetes service links and typos. Kubernetes injects
 * `<SERVICE>_SERVICE_HOST`, `<SERVICE>_SERVICE_PORT[_<PORT NAME>]`, `<SERVICE>_PORT` and
 * `<SERVICE>_PORT_<n>_<PROTO>[_PROTO|_PORT|_ADDR]` for every Service in the namespace (Docker links use the same
 * shape), so a Service named hookwatch (or hookwatch-otlp, ...) puts HOOKWATCH_* names into every pod that
 * nobody chose. Those must never stop the process; anything else unknown is most likely a typo.
 */

import { editDistance } from '../edit-distance.ts';

const SERVICE_LINK = /^HOOKWATCH(?:_[A-Z0-9_]+?)?_(?:SERVICE_HOST|SERVICE_PORT(?:_[A-Z0-9_]+)?|PORT(?:_\d+_(?:TCP|UDP|SCTP)(?:_(?:PROTO|PORT|ADDR))?)?)$/;

/** True for a name Kubernetes (or Docker links) would inject for a Service whose name maps to HOOKWATCH_*. */
export function isServiceLinkName(name: string): boolean {
  return SERVICE_LINK.test(name);
}

/**
 * The address setting meant by a port set on its own (`HOOKWATCH_HTTP_PORT=9318`, `HOOKWATCH_PORT=8080`), or
 * undefined. Its name is a service link's, but a service link's `<SERVICE>_PORT` is always a URL
 * (`tcp://10.96.12.7:4317`): a bare port number there was set by a person guessing at the `..._ADDR` setting.
 */
export function addrForPort(name: string, value: string, known: readonly string[]): string | undefined {
  if (!/^\d{1,5}$/.test(value.trim()) || !/^HOOKWATCH(?:_[A-Z0-9_]+)?_PORT$/.test(name) || /_SERVICE_PORT$|_PORT_\d+_[A-Z]+_PORT$/.test(name)) return undefined;
  if (name === 'HOOKWATCH_PORT') return 'HOOKWATCH_HTTP_ADDR';
  // HOOKWATCH_HTTP_PORT, HOOKWATCH_OTLP_PORT (its HTTP receiver), HOOKWATCH_GRPC_PORT (the OTLP/gRPC one).
  const stem = name.replace(/_PORT$/, '');
  return [`${stem}_ADDR`, `${stem}_HTTP_ADDR`, stem.replace(/^HOOKWATCH_/, 'HOOKWATCH_OTLP_') + '_ADDR'].find((a) => known.includes(a));
}

/** Variables with more words than `name` that hold all of its words in order (`OTLP_ADDR` in `OTLP_HTTP_ADDR`). */
function widenedBy(name: string, known: readonly string[]): string[] {
  const words = name.split('_');
  return known.filter((k) => {
    const theirs = k.split('_');
    let i = 0;
    for (const w of theirs) if (w === words[i]) i++;
    return i === words.length && theirs.length > words.length;
  });
}

/** Up to this many names with words left out are named at once; past it, none is likelier than the others. */
const MAX_WIDENED = 3;

/**
 * What an unknown name likely meant, in words: every known name holding its words in order when words were left
 * out (`HOOKWATCH_OTLP_ADDR`: "HOOKWATCH_OTLP_HTTP_ADDR or HOOKWATCH_OTLP_GRPC_ADDR", up to three), rather than one
 * a few letters away that means something else; else the nearest name (nearestName); undefined when none fits.
 */
export function meantNames(name: string, known: readonly string[]): string | undefined {
  const widened = widenedBy(name, known);
  if (widened.length === 0 || widened.length > MAX_WIDENED) return nearestName(name, known);
  return widened.length === 1 ? widened[0] : `${widened.slice(0, -1).join(', ')} or ${widened.at(-1) ?? ''}`;
}

/** The known name closest to `name`, or undefined when none is close enough to be a plausible typo. */
export function nearestName(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const k of known) {
    const d = editDistance(name, k);
    if (d < bestDistance) {
      best = k;
      bestDistance = d;
    }
  }
  // Past a third of the name's length the "suggestion" is noise rather than help.
  return best !== undefined && bestDistance <= Math.max(2, Math.ceil(name.length / 3)) ? best : undefined;
}
