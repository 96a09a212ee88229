/**
 * The shape of the shipped code, checked from its import statements: no runtime import cycle among non-test files,
 * config/ reaching the stages only through their settings modules (which are leaves), no shipped file importing a
 * dev dependency (the image installs production dependencies only), no test support in
 * the image and no shipped file that only tests use. Parsed with TypeScript's own parser, so comments and strings
 * never count as imports.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The folders whose non-test files make up the product and its tooling (bench/ and scripts/ are development tools). */
const SOURCE_ROOTS = ['collector', 'dashboard', 'shared', 'deploy/docker'];
/** Where the image starts running code: the CLI, the server, the dashboard page it serves, the health check. */
const ENTRY_POINTS = ['collector/bin/hookwatch.mjs', 'collector/src/main.ts', 'dashboard/src/entry.ts', 'deploy/docker/healthcheck.mjs'];
/** What the image copies (see Dockerfile); every other non-test file is development tooling such as the demo. */
const SHIPPED_ROOTS = ['collector/bin', 'collector/src', 'shared/src', 'dashboard/server.ts', 'dashboard/src', 'dashboard/public', 'deploy/docker'];

/**
 * The stages below the JSON API: they speak in the collector's own types (collector/src/store/model.ts), and the
 * API maps those to its wire shapes (collector/src/api/wire.ts), so storage never changes with how the API spells a
 * field. Tests there may still read the API's JSON.
 */
const BELOW_API = ['collector/src/store', 'collector/src/hooks', 'collector/src/otlp', 'collector/src/receiver', 'collector/src/pipeline', 'collector/src/privacy'];
const WIRE_TYPES = ['shared/src/api.ts', 'shared/src/transcript-api.ts'];

interface ImportEdge {
  from: string;
  specifier: string;
  /**
   * `load`: the module is loaded (static import, re-export, `import()`). `type`: `import type` / `export type`,
   * erased before Node runs the file. `reference`: named but not loaded by this file (`new URL('./x.ts',
   * import.meta.url)` for a child process, `import.meta.resolve('pkg')`), still part of what the file needs.
   */
  kind: 'load' | 'type' | 'reference';
}

/** A test file, or test support: kept out of the image and free to use dev dependencies. */
function isTestPath(path: string): boolean {
  const parts = path.split('/');
  const name = parts.at(-1) ?? '';
  return parts.includes('test') || parts.includes('testdata') || /\.(test|live)\.ts$/.test(name) || /(^|[-.])test([-.]|$)/.test(name);
}

function listSources(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules' && entry.name !== 'dist') listSources(path, out);
    } else if (/\.(ts|mts|mjs)$/.test(entry.name) && !entry.name.endsWith('.d.ts') && !entry.name.endsWith('.d.mts')) {
      out.push(path);
    }
  }
  return out;
}

/** `import.meta.<name>`. */
function isImportMeta(node: ts.Node, name: string): boolean {
  return ts.isPropertyAccessExpression(node) && node.name.text === name && ts.isMetaProperty(node.expression) && node.expression.keywordToken === ts.SyntaxKind.ImportKeyword;
}

/** Every import of a file: static imports and re-exports, `import('...')` calls and module references with a literal specifier. */
function importsOf(file: string, text: string): ImportEdge[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, file.endsWith('.ts') ? ts.ScriptKind.TS : ts.ScriptKind.JS);
  const edges: ImportEdge[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      // `import { type A } from` still loads the module under Node's type stripping; only `import type` does not.
      edges.push({ from: file, specifier: node.moduleSpecifier.text, kind: node.importClause?.isTypeOnly ? 'type' : 'load' });
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      edges.push({ from: file, specifier: node.moduleSpecifier.text, kind: node.isTypeOnly ? 'type' : 'load' });
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [arg] = node.arguments;
      if (arg && ts.isStringLiteralLike(arg)) edges.push({ from: file, specifier: arg.text, kind: 'load' });
    } else if (ts.isNewExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'URL') {
      const [arg, base] = node.arguments ?? [];
      if (arg && base && ts.isStringLiteralLike(arg) && /\.(ts|mts|mjs|js)$/.test(arg.text) && isImportMeta(base, 'url')) {
        edges.push({ from: file, specifier: arg.text, kind: 'reference' });
      }
    } else if (ts.isCallExpression(node) && isImportMeta(node.expression, 'resolve')) {
      const [arg] = node.arguments;
      if (arg && ts.isStringLiteralLike(arg)) edges.push({ from: file, specifier: arg.text, kind: 'reference' });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return edges;
}

/** The repository-relative file a relative specifier names, or undefined for a package. */
function resolveRelative(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  return relative(ROOT, resolve(ROOT, dirname(from), specifier)).split(sep).join('/');
}

/** `@scope/name/sub` -> `@scope/name`, `name/sub` -> `name`. */
function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? specifier);
}

/** Each elementary cycle once, as the list of files around it (Tarjan's strongly connected components, then one cycle per component). */
function findCycles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const indices = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const strongConnect = (v: string): void => {
    indices.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!indices.has(w)) {
        strongConnect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, indices.get(w)!));
      }
    }
    if (low.get(v) === indices.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) components.push(component);
    }
  };
  for (const v of [...graph.keys()].sort()) if (!indices.has(v)) strongConnect(v);
  // One concrete cycle per component (shortest path back to its first file), so the message names a path to cut.
  return components.map((component) => {
    const members = new Set(component);
    const start = [...component].sort()[0]!;
    const previous = new Map<string, string>();
    const queue = [start];
    for (let i = 0; i < queue.length; i++) {
      const v = queue[i]!;
      for (const w of graph.get(v) ?? []) {
        if (!members.has(w)) continue;
        if (w === start) {
          const path = [v];
          while (path[0] !== start) path.unshift(previous.get(path[0]!)!);
          return [...path, start];
        }
        if (!previous.has(w)) {
          previous.set(w, v);
          queue.push(w);
        }
      }
    }
    return [...component, component[0]!];
  });
}

/** A stage's settings module: its rows, defaults and checks (`collector/src/<stage>/settings.ts`). */
const SETTINGS_MODULE = /^collector\/src\/[^/]+\/settings\.ts$/;
const CONFIG_DIR = 'collector/src/config/';
/** What a settings module may use of config/: the row types and the value parsers, never the loader. */
const CONFIG_LEAVES = ['collector/src/config/setting.ts', 'collector/src/config/values.ts'];
/**
 * Low-level leaves of no stage that config/ may use too (e.g. the edit distance behind "did you mean", the
 * host:port splitter behind the check that two listeners never share a port, the names of the variables
 * `hookwatch guard` reads, which the loader must not take for misspelt settings).
 */
const COMMON_LEAVES = ['collector/src/edit-distance.ts', 'collector/src/version.ts', 'collector/src/net/addr.ts', 'collector/src/tools/guard/env.ts'];

/**
 * config/ composes the stages' settings and reads files, environment and flags; it reaches a stage only through
 * that stage's settings module, so it knows no component's internals.
 */
function configImportViolations(edges: readonly ImportEdge[]): string[] {
  return edges
    .filter((e) => e.from.startsWith(CONFIG_DIR))
    .map((e) => ({ e, target: resolveRelative(e.from, e.specifier) }))
    .filter(({ target }) => target !== undefined && !target.startsWith(CONFIG_DIR) && !SETTINGS_MODULE.test(target) && !COMMON_LEAVES.includes(target))
    .map(({ e }) => `${e.from} imports ${e.specifier}`);
}

/**
 * A settings module is a leaf: it imports the row types and value parsers of config/, other settings modules,
 * Node's built-ins and modules that load nothing themselves (constants and types, like hooks/model.ts), never
 * config/load.ts or config/index.ts, a package, or a stage's runtime.
 */
function settingsModuleViolations(edges: readonly ImportEdge[]): string[] {
  const loadsNothing = (file: string): boolean => edges.every((e) => e.from !== file || e.kind === 'type');
  return edges
    .filter((e) => SETTINGS_MODULE.test(e.from) && !e.specifier.startsWith('node:') && !builtins.has(e.specifier))
    .filter((e) => {
      const target = resolveRelative(e.from, e.specifier);
      return target === undefined || !(CONFIG_LEAVES.includes(target) || SETTINGS_MODULE.test(target) || (!target.startsWith(CONFIG_DIR) && loadsNothing(target)));
    })
    .map((e) => `${e.from} imports ${e.specifier}`);
}

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies?: Record<string, string>; devDependencies?: Record<string, string> };
const devDependencies = new Set(Object.keys(pkg.devDependencies ?? {}));
const dependencies = new Set(Object.keys(pkg.dependencies ?? {}));
const builtins = new Set(builtinModules);

/** telemetry/ (the logger, the metrics registry) is imported by every stage, so it imports none of them. */
const TELEMETRY = 'collector/src/telemetry/';
/**
 * What telemetry/ may import besides itself: the low-level leaves that import nothing above them. config/setting.ts
 * and values.ts are what every stage's settings module reads its rows with; paced.ts slices long work.
 */
const TELEMETRY_MAY_IMPORT = [TELEMETRY, 'collector/src/net/', 'collector/src/version.ts', 'shared/src/', 'collector/src/config/setting.ts', 'collector/src/config/values.ts', 'collector/src/paced.ts'];

/**
 * Imports of telemetry/ files that reach above it, type-only ones included (a type import is still knowledge of
 * the stage: the metrics of a stage belong in the stage, which registers them on the registry it is handed).
 */
function telemetryImportsAbove(all: readonly ImportEdge[]): string[] {
  return all
    .filter((e) => e.from.startsWith(TELEMETRY))
    .filter((e) => {
      const target = resolveRelative(e.from, e.specifier);
      if (target === undefined) return !(e.specifier.startsWith('node:') || builtins.has(e.specifier) || dependencies.has(packageName(e.specifier)));
      return !TELEMETRY_MAY_IMPORT.some((leaf) => target === leaf || target.startsWith(leaf));
    })
    .map((e) => `${e.from} imports ${e.specifier}`);
}

/** Imports of the API's wire types by non-test files of the stages below the API. */
function wireImportsBelowApi(list: readonly ImportEdge[]): string[] {
  return list
    .filter((e) => BELOW_API.some((dir) => e.from.startsWith(`${dir}/`)))
    .filter((e) => WIRE_TYPES.includes(resolveRelative(e.from, e.specifier) ?? ''))
    .map((e) => `${e.from} imports ${e.specifier}`);
}

const isShipped = (f: string): boolean => SHIPPED_ROOTS.some((root) => f === root || f.startsWith(`${root}/`));
/** Deleted while the image is built (see Dockerfile); anything else under a shipped folder is in the image. */
const deletedFromImage = (f: string): boolean => f.endsWith('.test.ts') || f.split('/').includes('testdata');

const allSources = SOURCE_ROOTS.flatMap((dir) => listSources(dir));
const files = allSources.filter((f) => !isTestPath(f));
const edges = files.flatMap((f) => importsOf(f, readFileSync(join(ROOT, f), 'utf8')));
/** What the image contains, test-named or not: a helper left in collector/src ships whatever it is called. */
const shippedFiles = allSources.filter((f) => isShipped(f) && !deletedFromImage(f));
const shippedEdges = shippedFiles.flatMap((f) => importsOf(f, readFileSync(join(ROOT, f), 'utf8')));

describe('import structure', () => {
  it('finds the files it is meant to check', () => {
    expect(files).toContain('collector/src/main.ts');
    expect(files).toContain('dashboard/src/main.ts');
    expect(files).toContain('shared/src/api.ts');
    expect(files.filter(isTestPath)).toEqual([]);
    expect(edges.length).toBeGreaterThan(files.length);
  });

  it('has no runtime import cycle among non-test files', () => {
    // Only imports that load a module count: `import type` is erased before Node runs a file, so a cycle through
    // it cannot change the order modules are evaluated in, which is what makes a cycle a fault (a value read
    // before its module has run). Dynamic import() counts: it loads the module at run time.
    const graph = new Map<string, string[]>(files.map((f) => [f, []]));
    for (const edge of edges) {
      const target = resolveRelative(edge.from, edge.specifier);
      if (edge.kind !== 'load' || target === undefined || !graph.has(target)) continue;
      graph.get(edge.from)!.push(target);
    }
    const cycles = findCycles(graph).map((cycle) => cycle.join(' -> '));
    expect(cycles).toEqual([]);
  });

  it('keeps telemetry/ a leaf: it imports no stage, service or API module, only node builtins, dependencies and low-level leaves', () => {
    expect(files.filter((f) => f.startsWith(TELEMETRY)).length).toBeGreaterThan(0);
    expect(telemetryImportsAbove(edges)).toEqual([]);
  });

  it('keeps test support out of the shipped tree (the image deletes only *.test.ts files and testdata/)', () => {
    expect(shippedFiles.filter(isTestPath)).toEqual([]);
  });

  it('ships only files its entry points import (test-only modules live in collector/test)', () => {
    // Type-only imports count here: a file of shared types is part of the product even though Node never loads it.
    const reached = new Set<string>();
    const queue = ENTRY_POINTS.filter((f) => shippedFiles.includes(f));
    expect(queue).toEqual(ENTRY_POINTS);
    while (queue.length > 0) {
      const file = queue.pop()!;
      if (reached.has(file)) continue;
      reached.add(file);
      for (const e of shippedEdges) {
        const target = e.from === file ? resolveRelative(file, e.specifier) : undefined;
        if (target !== undefined && !reached.has(target)) queue.push(target);
      }
    }
    expect(shippedFiles.filter((f) => !reached.has(f))).toEqual([]);
  });

  it('lets config/ import a stage only through its settings module, and keeps settings modules leaves', () => {
    expect(files.filter((f) => SETTINGS_MODULE.test(f)).length).toBeGreaterThanOrEqual(8);
    expect(configImportViolations(edges)).toEqual([]);
    expect(settingsModuleViolations(edges)).toEqual([]);
  });

  it('ships no file that imports a dev dependency', () => {
    const offending = shippedEdges
      .filter((e) => !e.specifier.startsWith('.') && !e.specifier.startsWith('node:') && !builtins.has(e.specifier))
      .filter((e) => devDependencies.has(packageName(e.specifier)))
      .map((e) => `${e.from} imports ${e.specifier}`);
    expect(offending).toEqual([]);
  });

  it('keeps the API\'s wire types out of the store and the stages below it', () => {
    expect(files.filter((f) => f.startsWith('collector/src/store/')).length).toBeGreaterThan(5);
    expect(wireImportsBelowApi(edges)).toEqual([]);
  });

  it('ships no file that imports a test file or test support', () => {
    const offending = shippedEdges
      .map((e) => ({ e, target: resolveRelative(e.from, e.specifier) }))
      .filter(({ target }) => target !== undefined && isTestPath(target))
      .map(({ e }) => `${e.from} imports ${e.specifier}`);
    expect(offending).toEqual([]);
  });
});

describe('the checks themselves', () => {
  it('see static, re-exported and dynamic imports and module references, and tell type-only ones apart', () => {
    const text = [
      "import a from './a.ts';",
      "import type { B } from './b.ts';",
      "import { type C } from './c.ts';",
      "export { d } from './d.ts';",
      "export type { E } from './e.ts';",
      "const f = await import('./f.ts');",
      "// import g from './g.ts';",
      "const h = \"import h from './h.ts'\";",
      "type I = import('./i.ts').I;",
      "const j = new URL('./j.ts', import.meta.url);",
      "const k = new URL('./k/', import.meta.url);",
      "const l = import.meta.resolve('l');",
    ].join('\n');
    expect(importsOf('x/y.ts', text).map((e) => [e.specifier, e.kind])).toEqual([
      ['./a.ts', 'load'],
      ['./b.ts', 'type'],
      ['./c.ts', 'load'],
      ['./d.ts', 'load'],
      ['./e.ts', 'type'],
      ['./f.ts', 'load'],
      ['./j.ts', 'reference'],
      ['l', 'reference'],
    ]);
  });

  it('see a telemetry/ import of a stage, type-only or not, and allow builtins, dependencies and leaves', () => {
    const edge = (specifier: string, kind: ImportEdge['kind'] = 'load'): ImportEdge => ({ from: 'collector/src/telemetry/x.ts', specifier, kind });
    expect(telemetryImportsAbove([
      edge('../receiver/options.ts', 'type'),
      edge('../store/counters.ts'),
      edge('../service.ts'),
      edge('vitest'),
      edge('./logger.ts'),
      edge('../net/addr.ts'),
      edge('../version.ts'),
      edge('../../../shared/src/cliff.ts'),
      edge('node:async_hooks'),
      edge('prom-client'),
      { from: 'collector/src/receiver/metrics.ts', specifier: '../telemetry/metrics.ts', kind: 'type' },
    ])).toEqual([
      'collector/src/telemetry/x.ts imports ../receiver/options.ts',
      'collector/src/telemetry/x.ts imports ../store/counters.ts',
      'collector/src/telemetry/x.ts imports ../service.ts',
      'collector/src/telemetry/x.ts imports vitest',
    ]);
  });

  it('see a wire type imported below the API, type-only or not, and not one imported by the API', () => {
    const found = wireImportsBelowApi([
      ...importsOf('collector/src/store/x.ts', "import type { HookCounters } from '../../../shared/src/api.ts';"),
      ...importsOf('collector/src/hooks/y.ts', "import { z } from '../../../shared/src/transcript-api.ts';"),
      ...importsOf('collector/src/store/model.ts', "import type { OutputKind } from '../../../shared/src/cliff.ts';"),
      ...importsOf('collector/src/api/wire.ts', "import type * as wire from '../../../shared/src/api.ts';"),
    ]);
    expect(found).toEqual(['collector/src/store/x.ts imports ../../../shared/src/api.ts', 'collector/src/hooks/y.ts imports ../../../shared/src/transcript-api.ts']);
  });

  it('report a cycle as a path, and none for a diamond', () => {
    const cyclic = new Map([['a', ['b']], ['b', ['c']], ['c', ['a', 'd']], ['d', []]]);
    expect(findCycles(cyclic)).toEqual([['a', 'b', 'c', 'a']]);
    const diamond = new Map([['a', ['b', 'c']], ['b', ['d']], ['c', ['d']], ['d', []]]);
    expect(findCycles(diamond)).toEqual([]);
  });

  it('refuse config/ importing a stage other than through its settings module', () => {
    const edge = (from: string, specifier: string, kind: ImportEdge['kind'] = 'load'): ImportEdge => ({ from, specifier, kind });
    expect(configImportViolations([
      edge('collector/src/config/index.ts', '../alerting/settings.ts'),
      edge('collector/src/config/load.ts', './schema.ts'),
      edge('collector/src/config/load.ts', 'yaml'),
      edge('collector/src/config/index.ts', '../alerting/engine.ts'),
      edge('collector/src/config/schema.ts', '../store/sql.ts', 'type'),
      edge('collector/src/config/index.ts', '../../../shared/src/api.ts'),
    ])).toEqual([
      'collector/src/config/index.ts imports ../alerting/engine.ts',
      'collector/src/config/schema.ts imports ../store/sql.ts',
      'collector/src/config/index.ts imports ../../../shared/src/api.ts',
    ]);
  });

  it('refuse a settings module that imports the loader, a package or a stage\'s runtime', () => {
    const edge = (from: string, specifier: string, kind: ImportEdge['kind'] = 'load'): ImportEdge => ({ from, specifier, kind });
    const graph = [
      edge('collector/src/alerting/settings.ts', '../config/setting.ts'),
      edge('collector/src/alerting/settings.ts', '../notify/settings.ts'),
      edge('collector/src/notify/settings.ts', '../config/values.ts'),
      edge('collector/src/notify/settings.ts', 'node:fs'),
      edge('collector/src/pipeline/settings.ts', '../hooks/model.ts'),
      edge('collector/src/hooks/model.ts', '../../../shared/src/cliff.ts', 'type'),
      edge('collector/src/store/settings.ts', '../config/index.ts', 'type'),
      edge('collector/src/store/settings.ts', '../config/load.ts'),
      edge('collector/src/forward/settings.ts', './queue.ts'),
      edge('collector/src/forward/queue.ts', 'node:sqlite'),
      edge('collector/src/forward/queue.ts', './forwarder.ts'),
      edge('collector/src/api/settings.ts', 'yaml'),
    ];
    expect(settingsModuleViolations(graph)).toEqual([
      'collector/src/store/settings.ts imports ../config/index.ts',
      'collector/src/store/settings.ts imports ../config/load.ts',
      'collector/src/forward/settings.ts imports ./queue.ts',
      'collector/src/api/settings.ts imports yaml',
    ]);
  });

  it('treat test files and test support as test code, and nothing else', () => {
    for (const path of ['collector/test/support/service.ts', 'collector/src/a.test.ts', 'collector/src/store/postgres/test-server.ts', 'collector/src/otlp/test-support.ts', 'collector/test/live/guard.live.ts']) {
      expect(isTestPath(path), path).toBe(true);
    }
    for (const path of ['collector/src/main.ts', 'collector/src/tools/guard/capture.ts', 'dashboard/src/pages/forwarding.ts', 'collector/src/latest.ts']) {
      expect(isTestPath(path), path).toBe(false);
    }
  });
});
