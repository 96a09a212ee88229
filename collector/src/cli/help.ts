/**
 * What `hookwatch --help` and `hookwatch <command> --help` print, laid out like a Go or Rust ops tool's: the
 * commands with a line each, then per command its flags, each with a description and its default in the unit
 * people write it in (30d, 20MiB, 10s), its environment variable, and the config file key.
 */
import { humanValue } from '../config/format.ts';
import { SETTINGS, flagName, type Setting } from '../config/schema.ts';
import { HOOKWATCH_VERSION } from '../version.ts';

export interface CommandInfo {
  name: string;
  summary: string;
}

/** The subcommands, in the order help lists them. */
export const COMMANDS: readonly CommandInfo[] = [
  { name: 'serve', summary: 'receive OTLP, store per-hook delivery, alert, serve the API and dashboard (default)' },
  { name: 'config', summary: 'print the effective configuration (secrets redacted) and exit' },
  { name: 'backup', summary: 'copy the SQLite store while hookwatch runs (hookwatch backup --to <file>)' },
  { name: 'restore', summary: 'put a backup in place of the stopped SQLite store (hookwatch restore --from <file>)' },
  { name: 'check', summary: 'run a hook command and measure its output against the 10,000-character cap' },
  { name: 'scan', summary: 'scan Claude Code transcripts for hook output that was saved to a file' },
  { name: 'guard', summary: 'run a hook command and keep each output under the cap (~9,500 delivered, not a preview)' },
  { name: 'help', summary: 'help for hookwatch or one command (hookwatch help <command>)' },
  { name: 'version', summary: 'print the version and exit' },
];

const WIDTH = 100;
const DESCRIPTION_INDENT = ' '.repeat(10);

/** Wraps text at WIDTH, each line indented. */
function wrap(text: string, indent: string): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line && indent.length + line.length + 1 + word.length > WIDTH) {
      lines.push(indent + line);
      line = word;
    } else {
      line = line ? `${line} ${word}` : word;
    }
  }
  if (line) lines.push(indent + line);
  return lines;
}

/** The placeholder after a flag: what kind of value it takes. */
function placeholder(s: Setting): string {
  switch (s.type) {
    case 'addr': return '<host:port>';
    case 'file': return '<path>';
    case 'duration': return '<duration>';
    case 'bytes': return '<size>';
    case 'int': return '<n>';
    case 'bool': return '<true|false>';
    case 'list': return '<a,b,...>';
    case 'enum': return `<${(s.values ?? []).join('|')}>`;
    default: return s.secret ? '<secret>' : '<value>';
  }
}

/** A setting's default as people write it; "none" for an empty one. */
export function defaultText(s: Setting): string {
  const v = humanValue(s, s.default);
  if (v === '' || v === null || v === undefined || (Array.isArray(v) && v.length === 0)) return 'none';
  return Array.isArray(v) ? v.join(',') : String(v);
}

/** Settings a flag can set (structured ones live in the config file only). */
export function flagSettings(): Setting[] {
  return SETTINGS.filter((s) => s.type !== 'object');
}

/** Every flag `serve` and `config` accept, without the leading dashes. */
export function configFlagNames(): string[] {
  return ['config', ...flagSettings().map((s) => flagName(s.key).slice(2))];
}

function flagBlock(flag: string, description: string, facts: string[]): string[] {
  return [`  ${flag}`, ...wrap(description, DESCRIPTION_INDENT), ...(facts.length ? wrap(facts.join(' '), DESCRIPTION_INDENT) : [])];
}

/** The settings flags, grouped by their first key part (otlp, http, db, ...). */
function settingsFlags(): string[] {
  const out: string[] = [];
  let group = '';
  for (const s of flagSettings()) {
    const g = s.key.split('.')[0] as string;
    if (g !== group) {
      group = g;
      out.push('', `${g}:`);
    }
    const facts = [`[default: ${defaultText(s)}]`];
    if (s.env) facts.push(`[env: ${s.env}]`);
    facts.push(`[file: ${s.key}]`);
    if (s.secret) facts.push('[secret]');
    out.push(...flagBlock(`${flagName(s.key)} ${placeholder(s)}`, s.description, facts));
  }
  return out;
}

const CONFIG_FLAG = flagBlock('--config <file>', 'YAML or JSON config file; keys nest by their dots (otlp: { http: { addr: ... } }).', ['[env: HOOKWATCH_CONFIG]']);
const HELP_FLAG = flagBlock('-h, --help', 'help for this command', []);

/** What the exit statuses of serve, config, backup, restore, help and version mean; check, scan and guard say their own. */
const EXIT_STATUS_TEXT = '0 done (serve: stopped cleanly by SIGTERM or SIGINT); 1 a failure: serve could not start (a port in use, a database it cannot open) or did not stop cleanly, backup could not copy, restore refused the backup or the store (left as it was); 2 bad usage: an unknown command or flag, a bad value, a configuration serve would refuse; backup or restore stopped by Ctrl-C, SIGTERM or SIGHUP ends killed by that signal (a shell shows 130, 143 or 129). check, scan and guard have statuses of their own (their --help).';

/** How a running serve takes a changed configuration, said by `hookwatch --help` and `serve --help`. */
const RELOAD_TEXT = 'While serve runs, SIGHUP (kill -HUP <pid>) or POST /-/reload reads the configuration again (file, environment, flags): an invalid one changes nothing, a valid one applies the settings docs/configuration.md marks reloadable (alert rules and receivers among them) and names the others that changed as needing a restart.';

/** `hookwatch --help`. */
export function globalHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length)) + 3;
  return [
    `hookwatch ${HOOKWATCH_VERSION}: tells a team when their Claude Code hooks stop reaching the model.`,
    '',
    'Usage:',
    '  hookwatch [command] [flags]',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}${c.summary}`),
    '',
    'Flags:',
    '  -h, --help       help for hookwatch (or, with a command, for that command)',
    '      --version    print the version and exit',
    '',
    'Run "hookwatch <command> --help" for a command\'s flags. Flags may come before the command too, as in',
    '"hookwatch --config hookwatch.yaml config".',
    ...wrap('Settings come from defaults < a config file < environment variables < flags; docs/configuration.md lists them all.', ''),
    '',
    ...wrap(RELOAD_TEXT, ''),
    '',
    ...wrap(`Exit status: ${EXIT_STATUS_TEXT}`, ''),
    '',
  ].join('\n');
}

/** A command's help page: its usage line, paragraphs on what it does, its flags, and a closing note. */
function helpPage(usage: string, paragraphs: readonly string[], flags: readonly string[], note: string): string {
  return ['Usage:', `  ${usage}`, '', ...paragraphs.flatMap((p) => [...wrap(p, ''), '']), 'Flags:', ...flags, '', ...wrap(note, ''), ''].join('\n');
}

/** `hookwatch serve --help`. */
export function serveHelp(): string {
  return helpPage('hookwatch serve [flags]', [
    'Receives Claude Code telemetry over OTLP/HTTP and OTLP/gRPC, stores every hook execution, evaluates the alert rules, forwards telemetry when configured, and serves the API, the dashboard and /metrics. Runs until SIGTERM or SIGINT, then drains and exits 0. The default command.',
    RELOAD_TEXT,
    'Every flag can also be set by its environment variable or config file key; flags win over the environment, which wins over the file. Durations take ms, s, m, h, d, w (90s, 1h30m, 30d); sizes take KiB, MiB, GiB, kB, MB, GB or bytes.',
  ], [...CONFIG_FLAG, ...HELP_FLAG, ...settingsFlags()], 'Alert rules and receivers are set in the config file, forwarding headers and alert external labels there or in HOOKWATCH_FORWARD_HEADERS and HOOKWATCH_ALERT_EXTERNAL_LABELS (name=value,name2=value2): see docs/alerting.md and docs/forwarding.md.');
}

/** `hookwatch config --help`. */
export function configHelp(): string {
  return helpPage('hookwatch config [--json] [flags]', [
    'Prints the effective configuration (defaults, config file, environment and flags merged) with secrets redacted, and exits. The YAML is a valid config file once each secret printed as <redacted> is put back (loading a <redacted> is an error naming the key): durations and sizes are in units (30d, 20MiB), and a comment names where each value that is not a default came from.',
  ], [...flagBlock('--json', 'print JSON instead of YAML', []), ...CONFIG_FLAG, ...HELP_FLAG], 'It takes every flag "hookwatch serve" takes, to show what they would change (hookwatch serve --help lists them).');
}

/** `hookwatch backup --help`. */
export function backupHelp(): string {
  return helpPage('hookwatch backup --to <file> [--force] [flags]', [
    'Copies the SQLite store (db) to <file> while hookwatch serve keeps running on it: the copy is the store as it was at one commit, the WAL included, and ingest goes on meanwhile. It is written beside <file> under a temporary name, checked with PRAGMA quick_check and renamed once whole; the size and the time taken are printed. Exits 1 with the reason when there is no database, the target cannot be written or the disk is full; Ctrl-C, SIGTERM or SIGHUP (its terminal closed) stops it, removes the temporary file and ends killed by that signal, so a shell loop of backups stops too (a shell shows 130, 143 or 129).',
    'The store is found as serve finds it: give the same config file, environment or --db. To restore, stop hookwatch, run hookwatch restore --from <file> with the same settings, and start it (docs/deploy.md). A PostgreSQL store is backed up with pg_dump and restored with pg_restore (docs/postgres.md, "Backup and restore").',
  ], [
    ...flagBlock('--to <file>', 'where the copy goes (required)', []),
    ...flagBlock('--force', 'replace <file> if it exists (never a file serve uses: the store, the forwarding queue, their -wal, -shm, -journal or .lock)', []),
    ...flagBlock('--db <path>', 'the SQLite database to copy', [`[default: ${defaultText(SETTINGS.find((s) => s.key === 'db') as Setting)}]`, '[env: HOOKWATCH_DB]']),
    ...CONFIG_FLAG, ...HELP_FLAG,
  ], 'It takes every flag "hookwatch serve" takes (hookwatch serve --help lists them); only the database\'s and forward.queue.path (whose files the copy never replaces) matter: an invalid value of another setting is said as a warning and ignored.');
}

/** `hookwatch restore --help`. */
export function restoreHelp(): string {
  return helpPage('hookwatch restore --from <file> [flags]', [
    'Puts a copy that hookwatch backup wrote in place of the SQLite store (db), once hookwatch serve is stopped: it is refused while a hookwatch serve holds the store\'s lock (<db>.lock), naming its pid. The backup is checked first, read-only: a SQLite database, a hookwatch store of this release or an older one (migrated when hookwatch starts), passing PRAGMA quick_check. Nothing is changed when it is refused.',
    'The store it replaces is kept beside it as <db>.replaced-<UTC time>, its WAL folded into it (a killed service leaves one), and the stale -wal and -shm files, which SQLite would apply to the backup, are removed. The backup is copied beside the store under a temporary name (0600), synced, read back (PRAGMA quick_check, the backup\'s schema version) and renamed into place: a failure (a full disk, a copy that did not land whole) or Ctrl-C, SIGTERM or SIGHUP before that leaves the store as it was, removes the copy, and exits 1 or ends killed by the signal (a shell shows 130, 143 or 129). A PostgreSQL store is restored from a pg_dump with pg_restore (docs/postgres.md, "Backup and restore").',
  ], [
    ...flagBlock('--from <file>', 'the backup to put in place of the store (required)', []),
    ...flagBlock('--db <path>', 'the SQLite database to replace', [`[default: ${defaultText(SETTINGS.find((s) => s.key === 'db') as Setting)}]`, '[env: HOOKWATCH_DB]']),
    ...CONFIG_FLAG, ...HELP_FLAG,
  ], 'It takes every flag "hookwatch serve" takes (hookwatch serve --help lists them); only the database\'s matters (an invalid value of another setting is said as a warning and ignored). Start hookwatch once it is done.');
}

/** `hookwatch version --help`. */
export function versionHelp(): string {
  return helpPage('hookwatch version', [
    `Prints the version of hookwatch and of the Node.js it runs on (hookwatch ${HOOKWATCH_VERSION} (Node.js ${process.versions.node})) and exits 0, as "hookwatch --version" does.`,
  ], [...HELP_FLAG], 'Include the line in a bug report: what a release changed is in the README\'s "Upgrading" part.');
}

/** `hookwatch help <command>` for serve, config, backup, restore, help, version; check and scan print their own. */
export function commandHelp(command: string): string | undefined {
  if (command === 'serve') return serveHelp();
  if (command === 'config') return configHelp();
  if (command === 'backup') return backupHelp();
  if (command === 'restore') return restoreHelp();
  if (command === 'version') return versionHelp();
  if (command === 'help') return globalHelp();
  return undefined;
}
