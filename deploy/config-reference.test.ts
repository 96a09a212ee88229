/**
 * docs/configuration.md is generated from the config schema: this fails when the committed file is stale,
 * so the reference cannot drift from the code. Also checks that the example config in it loads strictly.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { isServiceLinkName } from '../collector/src/config/env-names.ts';
import { loadConfig, toConfig } from '../collector/src/config/index.ts';
import { SETTINGS, type Setting } from '../collector/src/config/schema.ts';
import { CONFIG_DOC_PATH, formatDuration, formatValue, renderConfigReference } from '../scripts/gen-config-docs.ts';

const SCRIPT = fileURLToPath(new URL('../scripts/gen-config-docs.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** README.md and every page of docs/, as a reader finds them. */
const DOCS = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** The folders whose code reads environment variables: the service, its tools, the dashboard, benchmarks, scripts, tests. */
const CODE_DIRS = ['collector', 'dashboard', 'shared', 'bench', 'scripts'];

/** The fenced code blocks of a Markdown text with their language and the line they start on. */
function codeBlocks(text: string): { lang: string; line: number; body: string }[] {
  return [...text.matchAll(/^```(\w*)\n([\s\S]*?)^```/gm)].map((m) => ({ lang: m[1] as string, line: text.slice(0, m.index).split('\n').length, body: m[2] as string }));
}

/** Top-level keys of hookwatch's config file (`otlp`, `http`, `alerting`, ...). */
const TOP_LEVEL_KEYS = new Set(SETTINGS.map((s) => s.key.split('.')[0] as string));

/** `HOOKWATCH_*=value` lines of a shell block, with literal values only (no `$(...)` or `$VAR` to expand). */
function envAssignments(body: string): Record<string, string> | undefined {
  const env: Record<string, string> = {};
  for (const m of body.matchAll(/^(?:export\s+)?(HOOKWATCH_[A-Z0-9_]+)=(?:'([^']*)'|"([^"]*)"|(\S*))/gm)) {
    const value = m[2] ?? m[3] ?? m[4] ?? '';
    if (!value.includes('$')) env[m[1] as string] = value;
  }
  return Object.keys(env).length > 0 ? env : undefined;
}

/**
 * `HOOKWATCH_*` names of `text` that are none of: a setting's variable, a name Kubernetes' service links make
 * (which hookwatch ignores), a variable some code reads (`known`: the guard's, a benchmark's, the tests'); a
 * name ending in `_` (`HOOKWATCH_OTLP_TLS_*`, `HOOKWATCH_PORT_<n>_...`) must begin one of those.
 */
function unknownEnvNames(text: string, known: ReadonlySet<string>): string[] {
  const names = new Set([...text.matchAll(/\bHOOKWATCH_[A-Z0-9_]*/g)].map((m) => m[0]));
  return [...names].filter((n) => !(known.has(n) || isServiceLinkName(n) || (n.endsWith('_') && (isServiceLinkName(n.slice(0, -1)) || [...known].some((k) => k.startsWith(n))))));
}

/** Every `HOOKWATCH_*` name settings declare or code outside the tests' own files reads. */
function knownEnvNames(): Set<string> {
  const known = new Set(SETTINGS.flatMap((s) => (s.env ? [s.env] : [])).concat('HOOKWATCH_CONFIG'));
  for (const dir of CODE_DIRS) {
    for (const file of readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })) {
      if (!/\.(ts|mjs)$/.test(file) || file.endsWith('.test.ts') || file.includes('node_modules')) continue;
      for (const m of readFileSync(join(ROOT, dir, file), 'utf8').matchAll(/\bHOOKWATCH_[A-Z0-9_]*[A-Z0-9]\b/g)) known.add(m[0]);
    }
  }
  return known;
}

/**
 * Rows of hand-written settings tables (`| \`key\` | \`HOOKWATCH_...\` | default | ...`) that disagree with the
 * schema: an unknown key, another variable, or a default other than the one docs/configuration.md gives. A
 * default in words (`(none)`, `(generated, kept in the store)`) or left blank stands for an empty one only.
 */
function staleSettingRows(text: string, settings: readonly Setting[] = SETTINGS): string[] {
  const stale: string[] = [];
  for (const m of text.matchAll(/^\| `([A-Za-z.]+)` \| `(HOOKWATCH_[A-Z0-9_]+)` \|([^|]*)\|/gm)) {
    const [, key, env, cell] = m as unknown as [string, string, string, string];
    const s = settings.find((x) => x.key === key);
    const shown = /^\s*`([^`]*)`\s*$/.exec(cell)?.[1];
    const empty = s !== undefined && (s.default === '' || s.default === null || (Array.isArray(s.default) && s.default.length === 0));
    if (!s) stale.push(`${key}: no such setting`);
    else if (s.env !== env) stale.push(`${key}: its variable is ${s.env ?? '(none)'}, not ${env}`);
    else if (shown === undefined ? !empty : shown !== formatValue(s, s.default)) stale.push(`${key}: its default is ${formatValue(s, s.default)}, not ${cell.trim()}`);
  }
  return stale;
}

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

describe('config snippets in README.md and docs/*.md', () => {
  const blocks = DOCS.flatMap((file) => codeBlocks(readFileSync(join(ROOT, file), 'utf8')).map((b) => ({ ...b, where: `${file}:${b.line}` })));

  it('every hookwatch config file shown loads with the strict loader, as `hookwatch config --config FILE` loads it', () => {
    const configs = blocks.filter((b) => b.lang === 'yaml').filter((b) => {
      const doc: unknown = parseYaml(b.body);
      return typeof doc === 'object' && doc !== null && !Array.isArray(doc) && Object.keys(doc).some((k) => TOP_LEVEL_KEYS.has(k));
    });
    // README's alerting and example files, docs/alerting.md's receivers and Alertmanager, docs/configuration.md's example.
    expect(configs.length, 'config snippets found').toBeGreaterThanOrEqual(5);
    const refused = configs.flatMap((b) => {
      try {
        toConfig(loadConfig({ flags: { config: 'hookwatch.yaml' }, env: {}, readFile: () => b.body }));
        return [];
      } catch (err) {
        return [`${b.where}: ${(err as Error).message}`];
      }
    });
    expect(refused).toEqual([]);
  });

  it('every set of HOOKWATCH_* variables shown in a shell block loads with the strict loader', () => {
    const sets = blocks.filter((b) => b.lang === 'sh').flatMap((b) => {
      const env = envAssignments(b.body);
      return env ? [{ where: b.where, env }] : [];
    });
    expect(sets.map((s) => s.where), 'shell blocks setting variables').toEqual(expect.arrayContaining([expect.stringMatching(/^docs\/forwarding\.md:/)]));
    const refused = sets.flatMap((s) => {
      try {
        toConfig(loadConfig({ flags: {}, env: s.env }));
        return [];
      } catch (err) {
        return [`${s.where}: ${(err as Error).message}`];
      }
    });
    expect(refused).toEqual([]);
  });
});

describe('HOOKWATCH_* variables named in README.md, SECURITY.md and docs/*.md', () => {
  it('are settings, Kubernetes service links or variables hookwatch\'s code reads, so none is a name a reader sets in vain', () => {
    const known = knownEnvNames();
    expect(known).toContain('HOOKWATCH_GUARD_BUDGET');
    const unknown = [...DOCS, 'SECURITY.md'].flatMap((file) => unknownEnvNames(readFileSync(join(ROOT, file), 'utf8'), known).map((n) => `${file}: ${n}`));
    expect(unknown).toEqual([]);
  });

  it('finds a name nothing reads, and takes a prefix only when a known name begins with it', () => {
    const known = new Set(['HOOKWATCH_OTLP_TLS_CERT_FILE', 'HOOKWATCH_GUARD_BUDGET']);
    const text = 'Set `HOOKWATCH_GUARD_BUDGET`, `HOOKWATCH_OTLP_TLS_*`, `HOOKWATCH_PORT_4318_TCP_ADDR`, `HOOKWATCH_GUARD_BUDGT` and `HOOKWATCH_HTTP_TLS_*`.';
    expect(unknownEnvNames(text, known)).toEqual(['HOOKWATCH_GUARD_BUDGT', 'HOOKWATCH_HTTP_TLS_']);
  });
});

describe('settings tables in README.md and docs/*.md', () => {
  it('name each setting with its variable and default as the schema has them', () => {
    const pages = DOCS.filter((f) => f !== 'docs/configuration.md').map((file) => ({ file, text: readFileSync(join(ROOT, file), 'utf8') }));
    const rows = pages.flatMap(({ text }) => [...text.matchAll(/^\| `[A-Za-z.]+` \| `HOOKWATCH_/gm)]).length;
    // README's "Configuration" table and docs/postgres.md's.
    expect(rows, 'table rows found').toBeGreaterThanOrEqual(25);
    expect(pages.flatMap(({ file, text }) => staleSettingRows(text).map((p) => `${file}: ${p}`))).toEqual([]);
  });

  it('finds a row whose key, variable or default the schema does not have', () => {
    const table = [
      '| `retention.events` | `HOOKWATCH_RETENTION_EVENTS` | `30d` | raw events |',
      '| `retention.events` | `HOOKWATCH_RETENTION_EVENTS` | `14d` | raw events |',
      '| `retention.event` | `HOOKWATCH_RETENTION_EVENTS` | `30d` | raw events |',
      '| `otlp.maxRequestBytes` | `HOOKWATCH_OTLP_MAX_BYTES` | `20MiB` | size |',
      '| `otlp.ingestToken` | `HOOKWATCH_INGEST_TOKEN` | (none) | bearer token |',
      '| `db` | `HOOKWATCH_DB` | (none) | SQLite file |',
    ].join('\n');
    expect(staleSettingRows(table)).toEqual([
      'retention.events: its default is 30d, not `14d`',
      'retention.event: no such setting',
      'otlp.maxRequestBytes: its variable is HOOKWATCH_OTLP_MAX_REQUEST_BYTES, not HOOKWATCH_OTLP_MAX_BYTES',
      'db: its default is ./data/hookwatch.db, not (none)',
    ]);
  });
});
