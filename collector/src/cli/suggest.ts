/** "Did you mean ...?" for a mistyped command or flag: the closest known word by edit distance. */

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

/** The known word closest to `word`, when it is close enough to be a typo (or `word` is a prefix of it). */
export function closest(word: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const k of known) {
    const distance = k.startsWith(word) && word.length >= 3 ? 0.5 : editDistance(word, k);
    if (distance < bestDistance) {
      best = k;
      bestDistance = distance;
    }
  }
  return bestDistance <= Math.max(2, Math.floor(word.length / 4)) ? best : undefined;
}

/** " (did you mean X?)" or nothing. */
export function didYouMean(word: string, known: readonly string[], prefix = ''): string {
  const c = closest(word, known);
  return c === undefined ? '' : ` (did you mean ${prefix}${c}?)`;
}
