/**
 * Property tests draw from one seed so that a test run is repeatable: the same commit passes or fails the same way
 * on every machine. HOOKWATCH_FUZZ_SEED picks another seed (a number) or a fresh one per property ("random", what
 * `npm run fuzz` uses to explore); fast-check prints the seed of any counterexample so it can be replayed.
 */
import fc from 'fast-check';

const DEFAULT_SEED = 0x686b77; // "hkw"

const raw = process.env.HOOKWATCH_FUZZ_SEED;
if (raw !== 'random') {
  const seed = raw === undefined || raw === '' ? DEFAULT_SEED : Number(raw);
  if (!Number.isSafeInteger(seed)) throw new Error(`HOOKWATCH_FUZZ_SEED must be an integer or "random", got ${JSON.stringify(raw)}`);
  fc.configureGlobal({ seed });
}
