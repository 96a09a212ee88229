/**
 * Sorting the HOOKWATCH_* environment into settings, Kubernetes service links and typos. Kubernetes injects
 * `<SERVICE>_SERVICE_HOST`, `<SERVICE>_SERVICE_PORT[_<PORT NAME>]`, `<SERVICE>_PORT` and
 * `<SERVICE>_PORT_<n>_<PROTO>[_PROTO|_PORT|_ADDR]` for every Service in the namespace (Docker links use the same
 * shape), so a Service named hookwatch (or hookwatch-otlp, ...) puts HOOKWATCH_* names into every pod that
 * nobody chose. Those must never stop the process; anything else unknown is most likely a typo.
 */

const SERVICE_LINK = /^HOOKWATCH(?:_[A-Z0-9_]+?)?_(?:SERVICE_HOST|SERVICE_PORT(?:_[A-Z0-9_]+)?|PORT(?:_\d+_(?:TCP|UDP|SCTP)(?:_(?:PROTO|PORT|ADDR))?)?)$/;

/** True for a name Kubernetes (or Docker links) would inject for a Service whose name maps to HOOKWATCH_*. */
export function isServiceLinkName(name: string): boolean {
  return SERVICE_LINK.test(name);
}

/** Optimal string alignment distance (Levenshtein plus adjacent transpositions: `--bduget`). */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const row = d[i] as number[];
      const up = d[i - 1] as number[];
      row[j] = Math.min((up[j] as number) + 1, (row[j - 1] as number) + 1, (up[j - 1] as number) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j] as number, ((d[i - 2] as number[])[j - 2] as number) + 1);
    }
  }
  return (d[a.length] as number[])[b.length] as number;
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
