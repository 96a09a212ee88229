import { constants } from 'node:buffer';
import { stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

import { parseSize, parseToolArgs, UsageError } from '../common/args.ts';
import { claudeConfigDir } from '../common/claude-dir.ts';
import { EXIT_FINDINGS, EXIT_INCOMPLETE, EXIT_OK, EXIT_SEND_FAILED, EXIT_USAGE } from '../common/io.ts';
import type { ToolIO } from '../common/io.ts';
import { MAX_LINE_BYTES } from '../common/limits.ts';
import { formatBytes, formatCount, printable } from '../common/format.ts';
import { HOOKWATCH_VERSION } from '../../version.ts';
import { incomplete, lostOutputs, scanJson, scanText } from './report.ts';
import type { HookEventSender, SendOutcome } from './send.ts';
import { collectTranscriptFiles, EMPTY_TRANSCRIPT, TranscriptScanner } from './transcript.ts';

/** The path that stands for standard input, and the name its transcript is reported under. */
const STDIN_PATH = '-';
const STDIN_NAME = '(stdin)';

const HELP = `Usage: hookwatch scan [options] [paths...]

Reads Claude Code transcripts (*.jsonl; directories are searched recursively, subagent transcripts included,
symbolic links followed; a file reached by several paths is read once) and reports, per hook, per command and
per session, which hook output strings reached the model whole and which went over the 10,000-character cap
and were saved to a file instead (the model then sees only a ~2,000-character preview, while the hook reports
success). Hooks are named as telemetry names them (SessionStart:startup); per command is what telemetry cannot
tell: which of the commands of one event was over.
Records are counted once by their uuid, persisted outputs once by their saved file; copies of API requests are
not counted; records of unknown types are skipped and counted. Files are streamed line by line; unparsable
lines are skipped and counted and leave the scan incomplete (a record in one may have held a lost output; a last
line cut off mid-write is one still being written), and a file none of
whose lines is a transcript record (a README, a JSON document) is unreadable input: named with how many lines
could not be read, exit status 2 (UNREADABLE, not OK).

Paths default to ~/.claude/projects, or $CLAUDE_CONFIG_DIR/projects when that is set, as Claude Code writes them.
A path of - reads one transcript from standard input (reported as ${STDIN_NAME}). A transcript with no record to
read, an empty file or standard input or one of blank lines only, is unreadable input too (exit status 2): it
vouches for nothing.

Options:
  --json                 machine-readable output
  --send <url>           also post the findings to a hookwatch server as OTLP log records of their own
                         (hookwatch.transcript_finding, kept apart from telemetry; sending again counts nothing
                         twice) (e.g. http://hookwatch:4318; /v1/logs is appended to a base URL); with the
                         OTEL_EXPORTER_OTLP_HEADERS (or OTEL_EXPORTER_OTLP_LOGS_HEADERS) of the environment, such as
                         "Authorization=Bearer <token>" for a hookwatch with an ingest token
  --show-content         print the previews of persisted outputs (hook output is not printed otherwise)
  --max-line-bytes <size>
                         skip lines longer than this without buffering them (default 64MiB), a size such as
                         16MiB or 500KB (KB, MB, GB count 1000 bytes, KiB, MiB, GiB 1024) or a number of bytes; a
                         skipped line leaves the scan incomplete (exit status 4 unless outputs were found lost);
                         at most 512MiB, the longest line JavaScript can hold as a string
  -h, --help             this help

Exit status: 0 nothing persisted, 1 hook outputs were persisted (or are over the cap by size), 2 bad usage, unreadable input or no
transcripts found, 3 the findings could not be sent, 4 nothing found persisted but lines over --max-line-bytes were skipped
unread, lines could not be parsed, or a transcript ended in a line cut off mid-write (still being written), so outputs in
them may have been lost unseen (INCOMPLETE, not OK).
`;

/** What a path given that cannot be read is said to be, by its error code. */
const PATH_PROBLEMS: Record<string, string> = {
  ENOENT: 'no such file or directory',
  ELOOP: 'a symbolic link that loops',
  EACCES: 'permission denied',
  ENOTDIR: 'no such file or directory (a part of the path is a file)',
};

/** `hookwatch scan`: finds hook outputs that Claude Code saved to a file instead of delivering. Returns the exit code. */
export async function runScan(argv: string[], io: ToolIO): Promise<number> {
  let sender: HookEventSender | undefined;
  try {
    const { values, positionals } = parseToolArgs({
      args: argv,
      allowPositionals: true,
      options: {
        json: { type: 'boolean', default: false },
        send: { type: 'string' },
        'show-content': { type: 'boolean', default: false },
        'max-line-bytes': { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
    if (values.help) {
      io.stdout(HELP);
      return EXIT_OK;
    }
    const maxLineText = values['max-line-bytes'];
    // The size parser is loaded only when a limit is given: most scans take the default.
    const maxLineBytes = maxLineText === undefined ? MAX_LINE_BYTES : parseSize((await import('../../config/values.ts')).parseBytes, maxLineText, '--max-line-bytes', '64MiB or 500KB', 1);
    // A longer line could not be decoded to a string to parse: it would be read whole and then be unparsable.
    if (maxLineBytes > constants.MAX_STRING_LENGTH) {
      throw new UsageError(`--max-line-bytes: at most ${formatCount(constants.MAX_STRING_LENGTH)} bytes (${formatBytes(constants.MAX_STRING_LENGTH)}), the longest line JavaScript can hold as a string, got "${maxLineText}"`);
    }
    const home = io.env.HOME ?? homedir();
    // `-` is one transcript on standard input (`ssh host cat ... | hookwatch scan -`), read once however often given.
    const fromStdin = positionals.includes(STDIN_PATH);
    const given = positionals.filter((p) => p !== STDIN_PATH);
    // Claude Code keeps its data in $CLAUDE_CONFIG_DIR instead of ~/.claude when that is set.
    const configDir = claudeConfigDir(home, io);
    const paths = positionals.length > 0 ? given.map((p) => resolve(io.cwd, p)) : [join(configDir, 'projects')];
    for (const path of paths) {
      const problem = await stat(path).then(
        () => undefined,
        (error: NodeJS.ErrnoException) => PATH_PROBLEMS[error.code ?? ''] ?? `cannot read (${error.code ?? error.message})`,
      );
      // The default folder missing: most likely no session ran here yet, or Claude Code keeps its data elsewhere.
      const where = positionals.length > 0 || problem !== PATH_PROBLEMS['ENOENT'] ? ''
        : io.env.CLAUDE_CONFIG_DIR ? ', where Claude Code writes its transcripts under CLAUDE_CONFIG_DIR; give the paths of transcripts to scan'
          : ', where Claude Code writes its transcripts (none on this machine yet?); give the paths of transcripts to scan, or set CLAUDE_CONFIG_DIR to the folder Claude Code uses instead of ~/.claude';
      if (problem !== undefined) throw new UsageError(`${problem}: ${path}${where}`);
    }
    const files = await collectTranscriptFiles(paths);
    // A CI job pointed at the wrong folder must not pass.
    if (files.length === 0 && !fromStdin) throw new UsageError(`no transcripts found under ${paths.join(', ')} (looked for *.jsonl files)`);

    if (values.send !== undefined) {
      // Loaded only when sending, so a plain scan does not pay for the OpenTelemetry SDK.
      const { createHookEventSender } = await import('./send.ts');
      sender = createHookEventSender(values.send, HOOKWATCH_VERSION);
    }
    const scanner = new TranscriptScanner({ maxLineBytes, ...(sender ? { sink: sender.sink } : {}) });
    for (const file of files) {
      if (file.error === undefined) await scanner.scanFile(file.path);
      else scanner.unreadable(file.path, file.error);
    }
    if (fromStdin) {
      const file = await scanner.scanFile(STDIN_NAME, io.stdin ?? process.stdin);
      // Nothing piped in (the command before the pipe failed) is no transcript read, not a clean one.
      if (file.error === EMPTY_TRANSCRIPT) file.error = 'nothing arrived on standard input';
    }
    const send: SendOutcome | undefined = sender ? await sender.finish() : undefined;
    const result = scanner.result();

    const options = { showContent: values['show-content'], send, maxLineBytes };
    io.stdout(values.json ? `${JSON.stringify(scanJson(result, options), null, 2)}\n` : scanText(result, options));

    if (send?.error !== undefined) return EXIT_SEND_FAILED;
    if (lostOutputs(result.totals) > 0) return EXIT_FINDINGS;
    if (result.files.some((f) => f.error !== undefined)) return EXIT_USAGE;
    // Nothing found lost, but not everything was read: not a pass.
    if (incomplete(result)) return EXIT_INCOMPLETE;
    return EXIT_OK;
  } catch (error) {
    if (sender) await sender.finish();
    if (error instanceof UsageError) {
      io.stderr(`hookwatch scan: ${printable(error.message)}\nRun "hookwatch scan --help" for usage.\n`);
      return EXIT_USAGE;
    }
    io.stderr(`hookwatch scan: ${printable(error instanceof Error ? error.message : String(error))}\n`);
    return EXIT_USAGE;
  }
}
