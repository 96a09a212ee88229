/**
 * `hookwatch config`: the effective configuration, secrets redacted, durations and sizes in units. The YAML is
 * a config file hookwatch reads back; a comment on each value that is not a default names where it came from.
 */
import { Document, isScalar } from 'yaml';
import { effectiveDocument, type LoadedConfig } from '../config/load.ts';
import { flagName, SETTINGS } from '../config/schema.ts';

export function renderConfig(loaded: LoadedConfig, format: 'yaml' | 'json'): string {
  const values = effectiveDocument(loaded, { human: true });
  if (format === 'json') return JSON.stringify(values, null, 2) + '\n';
  const doc = new Document(values);
  doc.commentBefore = ' hookwatch effective configuration (secrets redacted); a valid config file';
  for (const s of SETTINGS) {
    const source = loaded.sources.get(s.key);
    if (!source || source === 'default') continue;
    const from = source === 'env' ? s.env : source === 'flag' ? flagName(s.key) : `config file ${loaded.file ?? ''}`;
    const node = doc.getIn(s.key.split('.'), true);
    if (isScalar(node)) node.comment = ` from ${from}`;
    else if (node && typeof node === 'object') (node as { commentBefore?: string }).commentBefore = ` from ${from}`;
  }
  return doc.toString({ lineWidth: 0 });
}
