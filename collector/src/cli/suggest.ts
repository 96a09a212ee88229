/** "Did you mean ...?" for a mistyped command or flag: the closest known word by edit distance. */
import { editDistance } from '../edit-distance.ts';

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
