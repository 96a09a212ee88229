import { didYouMean } from './suggest.ts';

/** Splits `--key value`, `--key=value` and positional arguments; stops at `--`. */
export interface ParsedArgs {
  flags: Record<string, string | undefined>;
  booleans: Set<string>;
  positionals: string[];
  rest: string[];
}

const BOOLEAN_FLAGS = new Set(['help', 'h', 'json', 'version']);

/**
 * With `known` (flag names without dashes), an unknown flag is refused by name, with the closest known one,
 * before its value is looked for: `--bogus` alone is "unknown flag", not "needs a value".
 */
export function parseFlags(argv: readonly string[], known?: readonly string[]): ParsedArgs {
  const out: ParsedArgs = { flags: {}, booleans: new Set(), positionals: [], rest: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === '--') {
      out.rest = argv.slice(i + 1);
      break;
    }
    if (a.startsWith('--') || (a.startsWith('-') && a.length === 2)) {
      const body = a.replace(/^--?/, '');
      const eq = body.indexOf('=');
      const name = eq >= 0 ? body.slice(0, eq) : body;
      if (known && !BOOLEAN_FLAGS.has(name) && !known.includes(name)) throw new Error(`unknown flag --${name}${didYouMean(name, known, '--')}`);
      if (eq >= 0) {
        out.flags[body.slice(0, eq)] = body.slice(eq + 1);
      } else if (BOOLEAN_FLAGS.has(body)) {
        out.booleans.add(body === 'h' ? 'help' : body);
      } else {
        const next = argv[i + 1];
        if (next === undefined || next.startsWith('--')) throw new Error(`flag ${a} needs a value`);
        out.flags[body] = next;
        i++;
      }
    } else {
      out.positionals.push(a);
    }
  }
  return out;
}
