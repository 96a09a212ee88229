/**
 * Loads the configuration once, strictly: built-in defaults < file (--config or HOOKWATCH_CONFIG) < environment
 * < flags. Unknown keys and bad values fail with a message that names the key; secret values never appear in it.
 */
import { isAbsolute, resolve } from 'node:path';
import { parseDocument, visit } from 'yaml';
import { readBoundedSync } from './bounded-read.ts';
import { humanValue } from './format.ts';
import { FILE_CONTENTS, FILE_CONTENTS_PROBLEM, durationProblem, parseBytes, parseDuration, quotedKey, readBoolean, readNumber, sizeFractionProblem } from './values.ts';
import { SETTINGS, findSetting, flagName, settingForFlag } from './schema.ts';
import { addrForPort, isServiceLinkName, meantNames, nearestName } from './env-names.ts';
import { ConfigError, type Setting } from './setting.ts';
import { defaultPath } from './default-paths.ts';
import { GUARD_ENV_NAMES } from '../tools/guard/env.ts';

export { ConfigError };

/** The most a config file may hold: four times what a Kubernetes ConfigMap can. */
export const MAX_CONFIG_FILE_BYTES = 4 * 1024 * 1024;

/**
 * A config file's text, read no further than MAX_CONFIG_FILE_BYTES: `--config` naming a device (/dev/zero) or a
 * log file by mistake is refused there, instead of filling memory or, at a reload, blocking the running process
 * while it parses. A pipe (`--config <(kubectl get ...)`) is read as a file is.
 */
function readConfigFile(path: string): string {
  return readBoundedSync(path, MAX_CONFIG_FILE_BYTES, 'configuration').toString('utf8');
}

/** Where a setting's effective value came from. */
export type Source = 'default' | 'file' | 'env' | 'flag';

export interface LoadedConfig {
  values: Map<string, unknown>;
  sources: Map<string, Source>;
  file?: string;
  /** Problems that do not stop the process (an unknown HOOKWATCH_* variable); logged once the logger exists. */
  warnings: string[];
  /** With LoadInput.only: the invalid values of the other settings, each left at its default. */
  ignored?: string[];
}

export interface LoadInput {
  /** Flags after the subcommand, e.g. ['--config', 'x.yaml', '--db', 'y.db']. */
  flags?: Record<string, string | undefined>;
  env?: NodeJS.ProcessEnv;
  /** Reads a config file; injectable for tests. */
  readFile?: (path: string) => string;
  /** Read again for a reload of the running configuration: an empty file is refused (emptyAtReload). */
  reload?: boolean;
  /**
   * The settings a command reads (backup and restore: the files they copy): an invalid value of any other is left
   * at its default and said in `ignored`, not thrown.
   */
  only?: ReadonlySet<string>;
}

/**
 * Why a config file that sets nothing is refused at a reload, or undefined: nothing but white space, or a document
 * that is empty (`---`, `null`, `~`, `{}`). At start it is all defaults; at a reload it is more likely a file cut
 * short while it is written (truncated, then written, its first line `---`), which would drop every receiver and
 * rule, as Alertmanager refuses one. A file with a comment is written on purpose and is read.
 */
function emptyAtReload(text: string, doc: unknown, file: string): string | undefined {
  const blank = text.trim() === '';
  const nothing = doc === null || doc === undefined || (isMapping(doc) && Object.keys(doc).length === 0);
  // With no value in the document, a # can only start a comment.
  if (!blank && (!nothing || text.includes('#'))) return undefined;
  return `config file ${file} is empty${blank ? '' : ' (a YAML document of no settings: ---, null or {})'}: a reload does not read that as all defaults, which would drop every receiver and rule (a file cut short while it is written reads so); write the settings, or a comment if the defaults are meant`;
}

function describe(setting: Setting, raw: unknown): string {
  if (setting.secret) return '(redacted)';
  // A key pasted where its path belongs (a Secret's tls.key set as the variable) must not reach an error message.
  if (setting.type === 'file' && typeof raw === 'string' && FILE_CONTENTS.test(raw)) return '(the text of a file, not shown)';
  // YAML reads `.inf`, `.nan` and a number too long for a double as such; JSON would write them null.
  if (typeof raw === 'number' && !Number.isFinite(raw)) return String(raw);
  if (!setting.redactValue) return JSON.stringify(raw);
  // redactValue knows strings; a list or mapping given instead may hold the same credentials anywhere in it.
  if (typeof raw !== 'string') return `(${Array.isArray(raw) ? 'a list' : raw === null ? 'null' : `a ${typeof raw}`}, not shown)`;
  return JSON.stringify(setting.redactValue(raw));
}

/** True when `message` begins with `key` or a path inside it (`key[3].threshold: ...`, `key.name: ...`). */
function namesKeyWithin(message: string, key: string): boolean {
  return message.startsWith(key) && /^[[.:]/.test(message.slice(key.length));
}

/** Converts a raw value (string from env/flags, or any YAML value) to the setting's type, or throws naming the key. */
export function coerce(setting: Setting, raw: unknown, origin: string): unknown {
  const fail = (why: string): never => {
    throw new ConfigError(`${origin}: invalid value ${describe(setting, raw)} for ${setting.key}: ${why}`);
  };
  // Bounds in the units the value is written in (10m, 1GiB), as the docs give them.
  const bounded = (n: number): number => {
    // Past 2^53 a number is no longer a whole one (1e30d is 8.64e+37 ms), and past a double's range it is Infinity.
    if (!Number.isSafeInteger(n)) fail('too large to count');
    if (setting.min !== undefined && n < setting.min) fail(`must be at least ${String(humanValue(setting, setting.min))}`);
    if (setting.max !== undefined && n > setting.max) fail(`must be at most ${String(humanValue(setting, setting.max))}`);
    return n;
  };
  switch (setting.type) {
    case 'string': {
      if (typeof raw !== 'string') fail('expected a string');
      const problem = setting.validate?.(raw);
      if (problem) fail(problem);
      return raw;
    }
    case 'file': {
      if (typeof raw !== 'string') fail('expected the path of a file');
      if (FILE_CONTENTS.test(raw as string)) fail(FILE_CONTENTS_PROBLEM);
      return raw;
    }
    case 'addr': {
      // A port alone, as a YAML number too, is refused with the forms it could have been meant as.
      if (/^\d{1,5}$/.test(String(raw)) && Number(raw) <= 65535) fail(`expected host:port, not a port alone: 127.0.0.1:${String(raw)} (this machine only) or 0.0.0.0:${String(raw)} (every address)`);
      if (typeof raw !== 'string') fail('expected host:port');
      const port = /^(?:\[[0-9a-fA-F:.]+\]|[^:\s[\]]*):(\d+)$/.exec(raw as string)?.[1];
      if (port !== undefined && Number(port) > 65535) fail(`port ${port} is out of range: a port is 0 to 65535 (0 picks a free one)`);
      if (port === undefined || port.length > 5) fail('expected host:port, e.g. 127.0.0.1:4318 or [::1]:4318 (port 0 picks a free one)');
      return raw;
    }
    case 'int': {
      const n = readNumber(raw);
      if (n === undefined || !Number.isSafeInteger(n)) fail('expected a whole number');
      return bounded(n as number);
    }
    case 'bytes': {
      const problem = sizeFractionProblem(raw);
      if (problem) fail(problem);
      const n = parseBytes(raw);
      if (n === undefined) fail('expected a size such as 20MiB or 1048576');
      return bounded(n as number);
    }
    case 'duration': {
      const problem = durationProblem(raw);
      if (problem) fail(problem);
      const n = parseDuration(raw);
      if (n === undefined) fail('expected a duration such as 30s, 5m, 24h or 30d');
      return bounded(n as number);
    }
    case 'enum': {
      // A YAML number (`minVersion: 1.3`) is the value as written.
      const v = typeof raw === 'string' ? raw.trim().toLowerCase() : typeof raw === 'number' ? String(raw) : raw;
      if (typeof v !== 'string' || !setting.values?.includes(v)) fail(`expected one of ${setting.values?.join(', ')}`);
      return v;
    }
    case 'bool': {
      const b = readBoolean(raw);
      return b ?? fail('expected true or false');
    }
    case 'list': {
      const list = typeof raw === 'string' ? raw.split(',').map((s) => s.trim()).filter(Boolean) : raw;
      if (!Array.isArray(list) || !list.every((x) => typeof x === 'string' && x.length > 0)) fail('expected a list of strings');
      return list;
    }
    case 'object': {
      const problem = setting.validate?.(raw);
      // A structured setting's parser names the key inside it (alerting.rules[3].threshold): that path and the
      // reason say it all, where the value would be the whole list of rules, or receivers holding secrets.
      if (problem && namesKeyWithin(problem, setting.key)) throw new ConfigError(`${origin}: ${problem}`);
      if (problem) fail(problem);
      return raw;
    }
  }
}

/** coerce for a value given as text by a variable or a flag, where the file's <redacted> is refused as well. */
export function coerceText(setting: Setting, text: string, origin: string): unknown {
  refuseRedacted(text, setting.key, origin);
  return coerce(setting, text, origin);
}

/** The prefix of the tags YAML itself defines (`!!int` is `tag:yaml.org,2002:int`). */
const CORE_TAG = 'tag:yaml.org,2002:';

/** A message of the YAML parser without the excerpt of the file it ends with: that may hold a secret. */
const firstLine = (message: string): string => (message.split('\n')[0] as string).replace(/:$/, '');

/**
 * What the YAML parser found wrong, with its line and column, without the text of the file some of its messages
 * quote (an escape sequence, a block scalar's header), which may be part of a secret.
 */
function parserProblem(err: Error): string {
  const message = firstLine(err.message);
  const at = / at line \d+, column \d+$/.exec(message)?.[0] ?? '';
  const kind = message.slice(0, message.length - at.length);
  if ((err as { code?: string }).code === 'BAD_DQ_ESCAPE') return `Invalid escape sequence in a double-quoted string${at} (write \\\\ for a backslash, or single-quote the value)`;
  return `${kind.replace(/^(Block scalar header includes extra characters):.*$/s, '$1')}${at}`;
}

/**
 * The document a config file holds. What the parser only warns of is refused too, and never written to stderr
 * as it would (quoting the line): a tag it does not define (`!ENV NAME`, `!vault ...`) would be read as the bare
 * text after it, and a YAML version it does not know by its own rules.
 */
function parseConfigText(text: string, file: string): { doc: unknown; written: unknown } {
  // Merge keys (`<<: *base`) as Prometheus and Alertmanager read them: YAML 1.2 dropped them, Go's YAML library
  // kept them, and a `<<` read as a key was refused as unknown.
  const parsed = parseDocument(text, { merge: true });
  const problem = parsed.errors[0] ?? parsed.warnings[0];
  const start = problem?.linePos?.[0];
  const where = start ? ` at line ${start.line}, column ${start.col}` : '';
  if (problem?.code === 'TAG_RESOLVE_FAILED') {
    const tag = /^Unresolved tag: (\S+)/.exec(problem.message)?.[1];
    if (tag !== undefined && !tag.startsWith(CORE_TAG)) throw new ConfigError(`config file ${file}: the tag ${tag}${where} is not one hookwatch reads: write the value, or \${env:NAME} to take it from a variable`);
    // A tag of YAML itself on a value it does not fit (`!!int abc`), which would be read as the bare text too.
    const why = tag === undefined ? firstLine(problem.message).replace(/ at line \d+, column \d+$/, '') : `it is not a ${tag.replace(CORE_TAG, '!!')}`;
    throw new ConfigError(`config file ${file}: the value${where} does not fit its tag: ${why}`);
  }
  if (problem?.code === 'MULTIPLE_DOCS') throw new ConfigError(`config file ${file} holds a second YAML document${where}: hookwatch reads one; merge them, or remove the ---`);
  try {
    if (problem) throw problem;
    // The same document with every number and boolean value as its text in the file (keys left as they are, so
    // both have the same paths): what the settings whose values are text read there (Setting.textValues).
    const written = parsed.clone();
    visit(written, {
      Scalar(key, node) {
        if (key !== 'key' && (typeof node.value === 'number' || typeof node.value === 'boolean') && node.source !== undefined) node.value = node.source;
      },
    });
    return { doc: parsed.toJS(), written: written.toJS() };
  } catch (err) {
    throw new ConfigError(`config file ${file} is not valid YAML or JSON: ${parserProblem(err as Error)}`);
  }
}

/**
 * `value` with each number or boolean at `path` (Setting.textValues) replaced by its text in the file, found at the
 * same place in `written` (parseConfigText). Anything else, and a value of another shape, is left as it is.
 */
function asWritten(value: unknown, written: unknown, path: readonly string[]): unknown {
  if (path.length === 0) return (typeof value === 'number' || typeof value === 'boolean') && typeof written === 'string' ? written : value;
  const [step, ...rest] = path;
  if (step === '[]') return Array.isArray(value) && Array.isArray(written) ? value.map((v, i) => asWritten(v, written[i], rest)) : value;
  if (!isMapping(value) || !isMapping(written)) return value;
  if (step === '*') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, asWritten(v, written[k], rest)]));
  return Object.hasOwn(value, step as string) ? { ...value, [step as string]: asWritten(value[step as string], written[step as string], rest) } : value;
}

const isMapping = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** `${env:NAME}` in a config file value, as the OpenTelemetry Collector writes it; `$${` is a literal `${`. */
const ENV_REFERENCE = /\$\$\{|\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}|\$\{[^}]*\}?/g;

/**
 * The document with every `${env:NAME}` in its string values replaced by that variable, so a file kept in a
 * ConfigMap can take secrets (a webhook URL, a signing secret) from variables set by a Secret. An unset variable
 * is an error naming the key and the variable, never the value.
 */
function expandEnv(doc: unknown, env: NodeJS.ProcessEnv, path: string, origin: string): unknown {
  if (typeof doc === 'string') {
    refuseRedacted(doc, path || 'the document', origin, ', or ${env:NAME} to take it from a variable');
    if (!doc.includes('${')) return doc;
    return doc.replace(ENV_REFERENCE, (match, name: string | undefined) => {
      if (match === '$${') return '${';
      const where = path || 'the document';
      // The value may be a secret: the error names the key only, never the text around the `${`.
      if (name === undefined) throw new ConfigError(`${origin}: ${where} holds a \${ that is not a variable reference; write \${env:NAME}, or $\${ for a literal \${`);
      const value = env[name];
      if (value === undefined) throw new ConfigError(`${origin}: ${where} refers to \${env:${name}}, which is not set`);
      // The variable may hold `hookwatch config` output too (a Secret filled from it).
      refuseRedacted(value, `${where} (from \${env:${name}})`, origin);
      return value;
    });
  }
  if (Array.isArray(doc)) return doc.map((v, i) => expandEnv(v, env, `${path}[${i}]`, origin));
  if (doc !== null && typeof doc === 'object') {
    return Object.fromEntries(Object.entries(doc).map(([k, v]) => [k, expandEnv(v, env, path ? `${path}.${k}` : k, origin)]));
  }
  return doc;
}

/**
 * `hookwatch config` prints secrets as <redacted>: its output given back, from the file, a variable or a flag,
 * would send alerts to ".../<redacted>" or take "<redacted>" as the ingest token or the dashboard's password.
 * Refused naming the key, never the value.
 */
function refuseRedacted(value: string, key: string, origin: string, hint = ''): void {
  if (value.includes(REDACTED)) throw new ConfigError(`${origin}: ${key} holds ${REDACTED}, which \`hookwatch config\` prints in place of a secret; put the secret back${hint}`);
}

/** Flattens a parsed YAML/JSON document into dotted keys; object-typed settings stay whole. */
function flatten(doc: unknown, prefix: string, out: Map<string, unknown>, origin: string): void {
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
    throw new ConfigError(`${origin}: ${prefix || 'the document'} must be a mapping of keys to values`);
  }
  for (const [k, v] of Object.entries(doc)) {
    const key = prefix ? `${prefix}.${k}` : k;
    const setting = findSetting(key);
    if (setting) {
      // A dotted key (`log.level: debug`) and its nested form both given: YAML sees two keys, neither a repeat.
      if (out.has(key)) throw new ConfigError(`${origin}: ${key} is set twice (dotted and nested): keep one`);
      out.set(key, v);
    } else if (SETTINGS.some((s) => s.key.startsWith(key + '.'))) {
      // A section left empty (`alerting:` with its keys commented out) sets nothing; one given a value is named.
      if (v !== null) flatten(v, key, out, origin);
    } else {
      const near = nearestName(key, keyPaths());
      throw new ConfigError(`${origin}: unknown key ${quotedKey(key)}${near ? `; did you mean ${JSON.stringify(near)}?` : ''}`);
    }
  }
}

/** Every key and every section above one (`otlp`, `otlp.http`, `otlp.http.addr`): a typo can be at any level. */
const keyPaths = (): string[] => [...new Set(SETTINGS.flatMap((s) => s.key.split('.').map((_, i, parts) => parts.slice(0, i + 1).join('.'))))];

const envNames = (): string[] => [...SETTINGS.flatMap((s) => (s.env ? [s.env] : [])), 'HOOKWATCH_CONFIG'];

/** Builds the effective configuration. Throws ConfigError naming the key on any problem. */
export function loadConfig(input: LoadInput = {}): LoadedConfig {
  const env = input.env ?? process.env;
  const flags = input.flags ?? {};
  const values = new Map<string, unknown>();
  const sources = new Map<string, Source>();
  for (const s of SETTINGS) {
    values.set(s.key, s.pathDefault ? defaultPath(String(s.default)) : s.default);
    sources.set(s.key, 'default');
  }

  const ignored: string[] = [];
  /** Runs `set`; false when it refused a value of a setting `only` leaves out (said in `ignored`). */
  const tolerant = (key: string, set: () => void): boolean => {
    try {
      set();
      return true;
    } catch (err) {
      if (!input.only || input.only.has(key) || !(err instanceof ConfigError)) throw err;
      ignored.push(err.message);
      return false;
    }
  };

  const file = flags['config'] ?? env['HOOKWATCH_CONFIG'];
  // Empty is no file named (`--config "$CONFIG"` with CONFIG unset), not "run on the defaults".
  if (file?.trim() === '') throw new ConfigError(`${flags['config'] === undefined ? 'environment HOOKWATCH_CONFIG' : 'flag --config'}: no config file named: give its path, or leave it unset to start without one`);
  if (file) {
    let text: string;
    try {
      text = (input.readFile ?? readConfigFile)(file);
    } catch (err) {
      // A relative path is read from the folder hookwatch runs in: under `npm start` hookwatch's own, not the shell's.
      const where = isAbsolute(file) ? '' : ` (${resolve(file)})`;
      throw new ConfigError(`cannot read config file ${file}${where}: ${(err as Error).message}`);
    }
    const parsed = parseConfigText(text, file);
    const empty = input.reload ? emptyAtReload(text, parsed.doc, file) : undefined;
    if (empty) throw new ConfigError(empty);
    const doc = expandEnv(parsed.doc, env, '', `config file ${file}`);
    const raw = new Map<string, unknown>();
    const written = new Map<string, unknown>();
    if (doc !== null && doc !== undefined) {
      flatten(doc, '', raw, `config file ${file}`);
      flatten(parsed.written, '', written, `config file ${file}`);
    }
    for (const [key, v] of raw) {
      const setting = findSetting(key) as Setting;
      const value = setting.textValues === undefined ? v : asWritten(v, written.get(key), setting.textValues.split('.'));
      if (!tolerant(key, () => values.set(key, coerce(setting, value, `config file ${file}`)))) continue;
      sources.set(key, 'file');
    }
  }

  const warnings: string[] = [];
  for (const [name, v] of Object.entries(env)) {
    // hookwatch guard's variables are read by the guard; a shell that runs both exports them.
    if (!name.startsWith('HOOKWATCH_') || name === 'HOOKWATCH_CONFIG' || GUARD_ENV_NAMES.includes(name) || v === undefined) continue;
    const setting = SETTINGS.find((s) => s.env === name);
    if (!setting) {
      // The environment is shared with the platform (Kubernetes service links, CI, shells): an unknown name is
      // a warning, not a reason to crash-loop. Service-link names are expected and not even worth a warning,
      // unless a person set one to a port number, meaning an address setting.
      const addr = addrForPort(name, v, envNames());
      if (addr) {
        const host = String(SETTINGS.find((s) => s.env === addr)?.default ?? '127.0.0.1:0').replace(/:\d+$/, '');
        warnings.push(`environment: unknown variable ${name} is ignored; did you mean ${addr}=${host}:${v.trim()}? (an address is host:port)`);
        continue;
      }
      if (isServiceLinkName(name)) continue;
      const near = meantNames(name, [...envNames(), ...GUARD_ENV_NAMES]);
      warnings.push(`environment: unknown variable ${name} is ignored${near ? `; did you mean ${near}?` : ''}`);
      continue;
    }
    if (!tolerant(setting.key, () => values.set(setting.key, coerceText(setting, v, `environment ${name}`)))) continue;
    sources.set(setting.key, 'env');
  }

  for (const [name, v] of Object.entries(flags)) {
    if (name === 'config' || v === undefined) continue;
    const setting = settingForFlag(name);
    if (!setting) {
      const near = nearestName(`--${name}`, SETTINGS.filter((s) => s.type !== 'object').map((s) => flagName(s.key)));
      throw new ConfigError(`unknown flag --${name}${near ? `; did you mean ${near}?` : ''}`);
    }
    if (!tolerant(setting.key, () => values.set(setting.key, coerceText(setting, v, `flag --${name}`)))) continue;
    sources.set(setting.key, 'flag');
  }
  return { values, sources, warnings, ...(file ? { file } : {}), ...(input.only ? { ignored } : {}) };
}

/**
 * The settings whose effective value differs between two loads that a reload cannot apply (listen addresses, the
 * database, TLS files, ...): they take effect at the next restart. Names only, never values.
 */
export function restartRequired(running: LoadedConfig, next: LoadedConfig): string[] {
  return SETTINGS.filter((s) => !s.reloadable && JSON.stringify(running.values.get(s.key)) !== JSON.stringify(next.values.get(s.key))).map((s) => s.key);
}

const REDACTED = '<redacted>';

/** Replaces a secret with a marker; an empty secret stays empty so "not set" is visible. */
export function redact(setting: Setting, value: unknown): unknown {
  if (setting.redactValue) return setting.redactValue(value);
  if (!setting.secret) return value;
  if (value === '' || value === undefined || value === null) return value;
  // An empty mapping or list holds no secret, and printing it keeps `hookwatch config` output loadable.
  if (typeof value === 'object' && Object.keys(value).length === 0) return value;
  return REDACTED;
}

/**
 * The effective configuration as a nested document with secrets redacted (for `hookwatch config`); with
 * `human`, durations and sizes in units (30d, 20MiB), which the loader reads back.
 */
export function effectiveDocument(loaded: LoadedConfig, opts: { human?: boolean } = {}): Record<string, unknown> {
  const doc: Record<string, unknown> = {};
  for (const s of SETTINGS) {
    const parts = s.key.split('.');
    let node = doc;
    for (const p of parts.slice(0, -1)) node = (node[p] ??= {}) as Record<string, unknown>;
    const value = redact(s, loaded.values.get(s.key));
    node[parts[parts.length - 1] as string] = opts.human ? humanValue(s, value) : value;
  }
  return doc;
}
