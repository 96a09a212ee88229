import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');

/** The dashboard's own modules (the page, its server and the demo), without tests and their fixtures. */
function productFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'test' || e.name === 'testdata' ? [] : productFiles(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [path] : [];
  });
}

describe('the page\'s modules', () => {
  it('export nothing the dashboard never uses', () => {
    const sources = new Map(productFiles(ROOT).map((f) => [f, readFileSync(f, 'utf8')]));
    const unused: string[] = [];
    for (const [file, source] of sources) {
      if (!file.startsWith(import.meta.dirname)) continue;
      for (const m of source.matchAll(/^export (?:async )?(?:function|const|let|class|interface|type|enum) ([A-Za-z0-9_$]+)/gm)) {
        const name = m[1] as string;
        const word = new RegExp(`\\b${name.replace(/\$/g, '\\$')}\\b`, 'g');
        // Used when it is named again anywhere: in its own module past its declaration, or in another.
        const uses = [...sources.values()].reduce((n, s) => n + (s.match(word)?.length ?? 0), 0);
        if (uses < 2) unused.push(`${relative(import.meta.dirname, file)}: ${name}`);
      }
    }
    expect(unused).toEqual([]);
  });
});
