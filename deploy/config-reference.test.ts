/**
 * docs/configuration.md is generated from the config schema: this fails when the committed file is stale,
 * so the reference cannot drift from the code. Also checks that the example config in it loads strictly.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadConfig, toConfig } from '../collector/src/config/index.ts';
import { SETTINGS, type Setting } from '../collector/src/config/schema.ts';
import { CONFIG_DOC_PATH, formatDuration, renderConfigReference } from '../scripts/gen-config-docs.ts';

const SCRIPT = fileURLToPath(new URL('../scripts/gen-config-docs.ts', import.meta.url));

describe('docs/configuration.md', () => {
  it('is what scripts/gen-config-docs.ts generates from the schema (run `node scripts/gen-config-docs.ts` when this fails)', () => {
    expect(readFileSync(CONFIG_DOC_PATH, 'utf8')).toBe(renderConfigReference());
  });

  it('lists every setting with its environment variable and flag', () => {
    const doc = readFileSync(CONFIG_DOC_PATH, 'utf8');
    for (const s of SETTINGS) {
      expect(doc, s.key).toContain(`\`${s.key}\``);
      if (s.env) expect(doc, s.key).toContain(`\`${s.env}\``);
    }
  });

  it('its example config file loads with the strict loader', () => {
    const doc = readFileSync(CONFIG_DOC_PATH, 'utf8');
    const yaml = /```yaml\n([\s\S]*?)```/.exec(doc)?.[1];
    expect(yaml).toContain('addr:');
    const loaded = loadConfig({ flags: { config: 'example.yaml' }, env: {}, readFile: () => yaml as string });
    toConfig(loaded);
    expect(loaded.sources.get('http.addr')).toBe('file');
  });

  it('changes when the schema changes (a new row appears; table cells stay one line even with | in a description)', () => {
    const row: Setting = { key: 'example.newThing', env: 'HOOKWATCH_EXAMPLE_NEW_THING', type: 'duration', default: 90_000, min: 1000, description: 'A | pipe\nand a newline.' };
    const text = renderConfigReference([...SETTINGS, row]);
    expect(text).not.toBe(renderConfigReference());
    expect(text).toContain('| `example.newThing` | `HOOKWATCH_EXAMPLE_NEW_THING` | `--example-new-thing` | duration; ≥ 1s | `90s` | A \\| pipe and a newline. |');
  });

  it('--check exits 0 when current and 1 with a message when stale', () => {
    const ok = spawnSync(process.execPath, [SCRIPT, '--check'], { encoding: 'utf8', timeout: 20_000 });
    expect(ok.status, ok.stderr).toBe(0);
    const dir = mkdtempSync(join(tmpdir(), 'hookwatch-docs-'));
    try {
      const stale = join(dir, 'configuration.md');
      writeFileSync(stale, renderConfigReference(SETTINGS.slice(1)));
      const r = spawnSync(process.execPath, [SCRIPT, '--check', '--out', stale], { encoding: 'utf8', timeout: 20_000 });
      expect(r.status).toBe(1);
      expect(r.stderr).toContain('out of date');
      const write = spawnSync(process.execPath, [SCRIPT, '--out', stale], { encoding: 'utf8', timeout: 20_000 });
      expect(write.status).toBe(0);
      expect(readFileSync(stale, 'utf8')).toBe(renderConfigReference());
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(formatDuration(25_000)).toBe('25s');
    expect(formatDuration(30 * 86_400_000)).toBe('30d');
    expect(formatDuration(1500)).toBe('1500ms');
  });
});
