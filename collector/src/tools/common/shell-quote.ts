/** Quoting of shell words, as guard and check write them into command lines (and guard reads them back). */
import { statSync } from 'node:fs';

/** A plain word passes through the shell unchanged; anything else is single-quoted. */
export function shellQuote(arg: string): string {
  return /^[A-Za-z0-9_/.:=@%+,-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** The inverse of shellQuote for one word; undefined when `word` is not something shellQuote produces. */
export function shellUnquote(word: string): string | undefined {
  if (/^[A-Za-z0-9_/.:=@%+,-]+$/.test(word)) return word;
  const match = /^'((?:[^']|'\\'')*)'$/.exec(word);
  return match ? (match[1] ?? '').replace(/'\\''/g, `'`) : undefined;
}

/**
 * The command line one word after `--` stands for. It is a command line for the shell, as in a settings file,
 * unless it is the path of an existing file (it holds a `/`, as a path the shell would not look up on PATH): the
 * shell that ran hookwatch has expanded it already (`-- "$CLAUDE_PROJECT_DIR"/hook.sh`), and read as a command
 * line again it would be split at a space in the path. That file becomes one quoted word, so the shell runs it as
 * it runs a hook file (a script without a #! line included).
 */
export function oneWordCommandLine(word: string): string {
  return word.includes('/') && isFile(word) ? shellQuote(word) : word;
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
