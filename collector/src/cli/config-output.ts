/**
 * `hookwatch config`: the effective configuration, secrets redacted, durations and sizes in units. The YAML is
 * a config file hookwatch reads back; a comment on each value that is not a default names where it came from.
 *
 * A value (or a file name) from a variable, a flag or the file may hold control characters, a terminal's escapes
 * or bidi controls: printed as they are, they would rewrite the terminal or turn the text around. As every report
 * of the command line, the output writes them out (printable), and inside quoted strings, where the escapes are
 * the YAML's or JSON's own (`"\u202e"`), so the output still reads back as the same values.
 */
import { Document, isScalar, visit } from 'yaml';
import { hasUnseen, printable } from '../../../shared/src/printable.ts';
import { humanValue } from '../config/format.ts';
import { effectiveDocument, type LoadedConfig } from '../config/load.ts';
import { findSetting, flagName, SETTINGS } from '../config/schema.ts';

/** A value hookwatch runs with that differs from the one set, because another setting moved it. */
export interface DerivedValue {
  key: string;
  value: unknown;
  /** Why, e.g. "cut to retention.events". */
  why: string;
}

export function renderConfig(loaded: LoadedConfig, format: 'yaml' | 'json', derived: readonly DerivedValue[] = []): string {
  const values = effectiveDocument(loaded, { human: true });
  const moved = derived.filter((d) => d.value !== loaded.values.get(d.key));
  for (const d of moved) {
    const setting = findSetting(d.key);
    const parts = d.key.split('.');
    let node = values;
    for (const p of parts.slice(0, -1)) node = node[p] as Record<string, unknown>;
    node[parts[parts.length - 1] as string] = setting ? humanValue(setting, d.value) : d.value;
  }
  // JSON.stringify writes a string's line feeds and tabs as escapes: those left are the layout's.
  if (format === 'json') return printable(JSON.stringify(values, null, 2), { keepLines: true, json: true }) + '\n';
  const doc = new Document(values);
  doc.commentBefore = ' hookwatch effective configuration (secrets redacted); a valid config file once the redacted secrets are put back';
  for (const s of SETTINGS) {
    const source = loaded.sources.get(s.key);
    if (!source || source === 'default') continue;
    // A comment is not read back: what it names is written out as it is shown.
    const from = printable(source === 'env' ? (s.env ?? '') : source === 'flag' ? flagName(s.key) : `config file ${loaded.file ?? ''}`);
    const node = doc.getIn(s.key.split('.'), true);
    if (isScalar(node)) node.comment = ` from ${from}`;
    else if (node && typeof node === 'object') (node as { commentBefore?: string }).commentBefore = ` from ${from}`;
  }
  for (const d of moved) {
    const node = doc.getIn(d.key.split('.'), true);
    if (isScalar(node)) node.comment = node.comment ? `${node.comment}; ${d.why}` : ` ${d.why}`;
    else if (node && typeof node === 'object') (node as { commentBefore?: string }).commentBefore = ` ${d.why}`;
  }
  // Double-quoted, the one style of YAML scalar with escapes: every character printable() writes out is then in one.
  visit(doc, {
    Scalar(_, node) {
      if (typeof node.value === 'string' && hasUnseen(node.value)) node.type = 'QUOTE_DOUBLE';
    },
  });
  return printable(doc.toString({ lineWidth: 0 }), { keepLines: true, yaml: true });
}
