/**
 * The links between README.md, SECURITY.md and docs/*.md lead somewhere: every relative link names a file that
 * exists, and every `#anchor` a heading of that page, as GitHub makes anchors of headings.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const PAGES = ['README.md', 'SECURITY.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** Markdown without its fenced code blocks, where `#` starts a comment and `](` is code. */
const prose = (text: string): string => text.replace(/^```[\s\S]*?^```/gm, '');

/** GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces as `-`. */
function headingAnchor(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

/** The anchors of a page's headings; a repeated heading gets `-1`, `-2`, ... as on GitHub. */
function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const m of prose(text).matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const anchor = headingAnchor(m[1] as string);
    const n = seen.get(anchor) ?? 0;
    seen.set(anchor, n + 1);
    anchors.add(n === 0 ? anchor : `${anchor}-${n}`);
  }
  return anchors;
}

/** Relative links of `page` (a path under `root`) whose file or anchor does not exist. */
function brokenLinks(root: string, page: string, text: string, read: (path: string) => string = (p) => readFileSync(join(root, p), 'utf8')): string[] {
  const broken: string[] = [];
  for (const m of prose(text).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const href = m[1] as string;
    if (/^[a-z][a-z0-9+.-]*:/i.test(href)) continue;
    const [path = '', anchor] = href.split('#');
    const target = path === '' ? page : normalize(join(dirname(page), decodeURI(path)));
    if (path !== '' && !existsSync(join(root, target))) broken.push(`${page}: ${href} (no file ${target})`);
    else if (anchor !== undefined && target.endsWith('.md') && !anchorsOf(path === '' ? text : read(target)).has(anchor)) broken.push(`${page}: ${href} (no heading #${anchor} in ${target})`);
  }
  return broken;
}

/** The repository's top-level folders a page names files under. */
const FOLDERS = ['collector', 'dashboard', 'deploy', 'bench', 'scripts', 'shared', 'docs', '.ci'];

/** `.gitignore`'s patterns as expressions: a path they match is made by a command (`npm run bench`), not kept. */
function ignored(root: string): RegExp[] {
  return readFileSync(join(root, '.gitignore'), 'utf8').split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => new RegExp(`(^|/)${l.replace(/\/$/, '').replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}(/|$)`));
}

/**
 * Repository paths `text` names (`deploy/prometheus/rules.yml`, `collector/test/support/postgres/server.ts`), in
 * prose and code alike, that are neither in `root` nor made by a command; a path with a placeholder
 * (`<pod>`, `*`, `{json,md}`, `$VAR`) is a pattern, and `deploy/hookwatch` is kubectl's name of the Deployment.
 */
function missingPaths(root: string, text: string): string[] {
  const patterns = ignored(root);
  const named = text.matchAll(new RegExp(`(?<![\\w./$~-])(?:${FOLDERS.map((f) => f.replace('.', '\\.')).join('|')})/[A-Za-z0-9_./-]*(?![A-Za-z0-9_./-]*[<*{$])`, 'g'));
  const paths = new Set([...named].map((m) => m[0].replace(/[./]+$/, '')).filter((p) => p !== 'deploy/hookwatch'));
  return [...paths].filter((p) => !existsSync(join(root, p)) && !patterns.some((re) => re.test(p)));
}

describe('links in README.md, SECURITY.md and docs/*.md', () => {
  it('every relative link names an existing file and every anchor a heading of that page', () => {
    const links = PAGES.map((p) => [...prose(readFileSync(join(ROOT, p), 'utf8')).matchAll(/\]\((?![a-z]+:)[^)]+\)/g)].length).reduce((a, b) => a + b, 0);
    expect(links, 'relative links found').toBeGreaterThan(20);
    expect(PAGES.flatMap((p) => brokenLinks(ROOT, p, readFileSync(join(ROOT, p), 'utf8')))).toEqual([]);
  });

  it('makes anchors as GitHub does and finds a link to a missing file or heading', () => {
    expect([...anchorsOf('# PostgreSQL and replicas\n## Backup and restore (SQLite)\n```sh\n# a comment\n```\n### What is rolled up, and what stays raw\n## API\n## API\n')])
      .toEqual(['postgresql-and-replicas', 'backup-and-restore-sqlite', 'what-is-rolled-up-and-what-stays-raw', 'api', 'api-1']);
    const page = 'See [late data](alerting.md#late-and-early-data), [gone](alerting.md#no-such-heading), [file](missing.md), [here](#a-comment), [web](https://example.com/#x).\n```sh\n# a comment\n```\n';
    expect(brokenLinks(join(ROOT, 'docs'), 'deploy.md', page, (p) => readFileSync(join(ROOT, 'docs', p), 'utf8'))).toEqual([
      'deploy.md: alerting.md#no-such-heading (no heading #no-such-heading in alerting.md)',
      'deploy.md: missing.md (no file missing.md)',
      'deploy.md: #a-comment (no heading #a-comment in deploy.md)',
    ]);
  });

  it('every repository path a page names exists, or is made by a command the page gives', () => {
    const named = PAGES.map((p) => [...readFileSync(join(ROOT, p), 'utf8').matchAll(/(?<![\w./$~-])(?:collector|deploy|bench)\//g)].length).reduce((a, b) => a + b, 0);
    expect(named, 'paths named').toBeGreaterThan(50);
    expect(PAGES.flatMap((p) => missingPaths(ROOT, readFileSync(join(ROOT, p), 'utf8')).map((m) => `${p}: ${m}`))).toEqual([]);
  });

  it('finds a path that is not there, and leaves patterns, generated files and kubectl\'s deploy/hookwatch alone', () => {
    const text = 'See `deploy/prometheus/rules.yml`, deploy/prometheus/rule.yml, `bench/results/latest.json`, `bench/results/<name>.md`, `kubectl exec deploy/hookwatch`, https://example.com/docs/x.md and `collector/src/nope.ts:12`.';
    expect(missingPaths(ROOT, text)).toEqual(['deploy/prometheus/rule.yml', 'collector/src/nope.ts']);
  });
});
