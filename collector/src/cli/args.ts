import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';
import { parseToolArgs } from '../tools/common/args.ts';

/** A command line as the commands read it: setting flags with their values, the boolean flags given, the rest. */
export interface ParsedArgs {
  flags: Record<string, string | undefined>;
  booleans: Set<string>;
  positionals: string[];
}

const BOOLEAN_OPTIONS: ParseArgsOptionsConfig = { help: { type: 'boolean', short: 'h' }, json: { type: 'boolean' }, version: { type: 'boolean' } };

/**
 * Reads `--key value`, `--key=value`, `-h` and positional arguments with node:util parseArgs, strictly: a flag
 * not in `known` (names without dashes, each taking a value) or a boolean flag is a UsageError naming it, with
 * the closest known one; so is a value flag given none. Positionals are returned for the caller to refuse.
 * `booleans` names a command's own boolean flags, beside --help, --json and --version.
 */
export function parseFlags(argv: readonly string[], known: readonly string[], booleans: readonly string[] = []): ParsedArgs {
  const options: ParseArgsOptionsConfig = { ...Object.fromEntries(known.map((name) => [name, { type: 'string' }])), ...Object.fromEntries(booleans.map((name) => [name, { type: 'boolean' }])), ...BOOLEAN_OPTIONS };
  const { values, positionals } = parseToolArgs({ args: [...argv], options, strict: true, allowPositionals: true });
  const out: ParsedArgs = { flags: {}, booleans: new Set(), positionals };
  for (const [name, value] of Object.entries(values)) {
    if (typeof value === 'string') out.flags[name] = value;
    else if (value === true) out.booleans.add(name);
  }
  return out;
}

/**
 * Where the command is in `argv`: first, or after flags (`hookwatch --config f.yaml config`, as git and kubectl
 * take it), those read as the setting flags (`known`, each taking a value) and boolean flags they are. Undefined
 * when the first argument after the flags is no command (or `--`): then none was named.
 */
export function commandIndex(argv: readonly string[], known: readonly string[], commands: readonly string[]): number | undefined {
  const first = argv[0];
  if (first === undefined) return undefined;
  if (!first.startsWith('-')) return 0;
  const options: ParseArgsOptionsConfig = { ...Object.fromEntries(known.map((name) => [name, { type: 'string' }])), ...BOOLEAN_OPTIONS };
  const { tokens } = parseArgs({ args: [...argv], options, strict: false, allowPositionals: true, tokens: true });
  const token = tokens.find((t) => t.kind === 'positional' || t.kind === 'option-terminator');
  return token?.kind === 'positional' && commands.includes(token.value) ? token.index : undefined;
}
