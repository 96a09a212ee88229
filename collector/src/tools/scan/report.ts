import { OUTPUT_CAP_CHARS, PREVIEW_CHARS } from '../../../../shared/src/cliff.ts';
import { formatBytes, formatCount, outputBlock, plural, printable, renderTable } from '../common/format.ts';
import { UNKNOWN_COMMAND } from './transcript.ts';
import type { DeliveryCounts, ScanResult } from './transcript.ts';
import type { SendOutcome } from './send.ts';

/** How the report is printed. */
export interface ReportOptions {
  showContent: boolean;
  send: SendOutcome | undefined;
  /** The line limit lines were skipped over, to name in the report. */
  maxLineBytes?: number;
}

/** What `scan --json` prints: stable keys for CI. Previews are included only with --show-content. */
export function scanJson(result: ScanResult, options: ReportOptions): unknown {
  return {
    tool: 'hookwatch scan',
    capChars: OUTPUT_CAP_CHARS,
    previewChars: PREVIEW_CHARS,
    // Not ok when part of the input went unread (an output in it may have been lost unseen), nor when sending failed.
    ok: lostOutputs(result.totals) === 0 && !incomplete(result) && options.send?.error === undefined,
    complete: !incomplete(result),
    totals: result.totals,
    hooks: result.hooks,
    sessions: result.sessions,
    files: result.files,
    persistedOutputs: result.persistedOutputs.map(({ preview, ...rest }) => (options.showContent ? { ...rest, preview } : rest)),
    ...(options.send ? { send: options.send } : {}),
  };
}

/** Outputs that did not reach the model whole: persisted, or over the cap by size without a delivery record. */
export function lostOutputs(counts: DeliveryCounts): number {
  return counts.outputsPersisted + counts.unconfirmedOverCap;
}

/**
 * True when part of the input went unread (a line over the line limit, a file that could not be read, a last line
 * cut off mid-write, a line that could not be parsed): a hook output in it may have been saved to a file without
 * the scan seeing it, so the scan cannot say nothing was lost.
 */
export function incomplete(result: ScanResult): boolean {
  return result.totals.oversizedLines > 0 || result.totals.unparsableLines > 0 || result.files.some((f) => f.error !== undefined || f.truncatedLastLine);
}

/** Unparsable lines other than a last line cut off mid-write (which the report names as that). */
function unparsableInside(result: ScanResult): number {
  return result.files.reduce((sum, f) => sum + f.unparsableLines - (f.truncatedLastLine ? 1 : 0), 0);
}

/**
 * The largest output of a row: its largest known size, but over the cap whenever the row persisted an output (every
 * persisted output was), though the transcript gave that output no size; never a delivered size in its place.
 */
function largestOutputCell(counts: DeliveryCounts): string {
  const known = counts.largestOutputChars;
  if (counts.outputsPersisted > 0 && (known === null || known <= OUTPUT_CAP_CHARS)) return `>${formatCount(OUTPUT_CAP_CHARS)}`;
  return known === null ? '-' : formatCount(known);
}

/** " (line 7)" for one line, " (first at line 7)" for several; nothing when the line is not known. */
function lineOf(count: number, first: number | undefined): string {
  if (first === undefined) return '';
  return count === 1 ? ` (line ${first})` : ` (first at line ${first})`;
}

function countCells(counts: DeliveryCounts, withUnconfirmed: boolean): string[] {
  const size = (n: number | null): string => (n === null ? '-' : formatCount(n));
  return [
    formatCount(counts.runs),
    formatCount(counts.outputs),
    formatCount(counts.delivered),
    formatCount(counts.outputsPersisted),
    ...(withUnconfirmed ? [formatCount(counts.unconfirmed)] : []),
    size(counts.largestDeliveredChars),
    largestOutputCell(counts),
  ];
}

function countHeader(withUnconfirmed: boolean): string[] {
  return ['runs', 'outputs', 'delivered', 'persisted', ...(withUnconfirmed ? ['unconfirmed'] : []), 'largest delivered', 'largest output'];
}

/** The human-readable report. Prints no hook output unless showContent (and then only the previews). */
export function scanText(result: ScanResult, options: ReportOptions): string {
  const { totals } = result;
  const out: string[] = [];
  const skipped = Object.entries(totals.skippedRecordTypes);
  const skippedCount = skipped.reduce((sum, [, n]) => sum + n, 0);
  out.push(
    `Scanned ${plural(result.files.length, 'file')} (${formatBytes(totals.bytes)}, ${plural(totals.lines, 'line')}): ` +
      `${plural(totals.records, 'hook record')}` +
      (totals.duplicateRecords > 0 ? `, ${plural(totals.duplicateRecords, 'duplicate')} ignored` : '') +
      (totals.requestCopies > 0 ? `, ${plural(totals.requestCopies, 'copy', 'copies')} of API requests not counted` : '') +
      (skippedCount > 0 ? `, ${plural(skippedCount, 'record')} of unknown type skipped (${printable(skipped.map(([type, n]) => `${type}: ${formatCount(n)}`).join(', '))})` : '') +
      (totals.unparsableLines > 0 ? `, ${plural(totals.unparsableLines, 'unparsable line')} skipped` : '') +
      (totals.oversizedLines > 0 ? `, ${plural(totals.oversizedLines, 'oversized line')} skipped` : '') +
      '\n',
  );

  const troubled = result.files.filter((f) => f.error !== undefined || f.unparsableLines > 0 || f.oversizedLines > 0);
  if (troubled.length > 0) {
    out.push('\nFiles with problems\n');
    for (const f of troubled) {
      const notes = [
        f.error !== undefined ? `unreadable: ${f.error}` : '',
        f.unparsableLines > 0 ? `${plural(f.unparsableLines, 'unparsable line')}${lineOf(f.unparsableLines, f.firstUnparsableLine)}` : '',
        f.truncatedLastLine ? 'last line cut off' : '',
        f.oversizedLines > 0 ? `${plural(f.oversizedLines, 'line')} over the line limit${lineOf(f.oversizedLines, f.firstOversizedLine)}` : '',
      ].filter(Boolean);
      out.push(`  ${printable(f.path)}: ${printable(notes.join(', '))}\n`);
    }
  }

  if (result.hooks.length > 0) {
    const unconfirmed = totals.unconfirmed > 0;
    const header = countHeader(unconfirmed);
    out.push('\nPer hook (named as telemetry names them; sizes in characters, UTF-16 code units)\n');
    // Every table counts alike: a row's outputs are its delivered plus persisted ones, its unconfirmed ones apart.
    if (unconfirmed) out.push('"outputs" is delivered plus persisted in every table; "unconfirmed" outputs are counted apart\n');
    out.push(renderTable(['hook', 'event', ...header], result.hooks.map((h) => [h.hookName, h.hookEvent, ...countCells(h, unconfirmed)]), '  '));
    out.push('\nPer command (telemetry sums the commands of one event; the transcript tells them apart)\n');
    out.push(
      renderTable(
        ['hook', ...header, 'command'],
        result.hooks.flatMap((h) => h.commands.map((c) => [h.hookName, ...countCells(c, unconfirmed), c.command])),
        '  ',
      ),
    );
    out.push('\nPer session\n');
    out.push(renderTable(['session', ...header, 'files'], result.sessions.map((s) => [s.sessionId, ...countCells(s, unconfirmed), s.files.join(', ')]), '  '));
  }

  if (result.persistedOutputs.length > 0) {
    out.push(`\nPersisted outputs (the model got a ~${formatCount(PREVIEW_CHARS)}-character preview instead of each)\n`);
    for (const p of result.persistedOutputs) {
      out.push(
        printable(`  ${p.sessionId}  ${p.hookName}  ${p.file}:${p.lineNumber}`) + '\n' +
          printable(`    command ${p.command ?? UNKNOWN_COMMAND}`) + '\n' +
          printable(`    ${p.chars !== null ? `${formatCount(p.chars)} characters, ` : p.sizeLabel !== undefined ? `size ${p.sizeLabel}, ` : ''}saved to ${p.savedPath ?? '(path not shown)'}`) + '\n',
      );
      // Indented, so no line of a hook's output reads as a line of the report.
      if (options.showContent) out.push(`    --- preview ---\n${outputBlock(p.preview)}\n    --- end of preview ---\n`);
    }
    if (totals.outputsPersisted > result.persistedOutputs.length) {
      out.push(`  ... and more (${formatCount(totals.outputsPersisted)} in all; --json lists the first ${formatCount(result.persistedOutputs.length)})\n`);
    }
  }

  if (options.send) {
    out.push(
      options.send.error === undefined
        ? `\nSent ${plural(options.send.exported, 'finding')} (command runs and output outcomes) to ${options.send.url}\n`
        : `\nSending to ${options.send.url} failed: ${printable(options.send.error)} (${formatCount(options.send.exported)} of ${plural(options.send.emitted + options.send.notSent, 'finding')} sent; the rest not sent)\n`,
    );
  }

  out.push('\n');
  const lost = lostOutputs(totals);
  if (lost > 0) {
    const sessions = result.sessions.filter((s) => lostOutputs(s) > 0).length;
    const bySize = totals.unconfirmedOverCap > 0 ? ` (${formatCount(totals.unconfirmedOverCap)} of them known by size alone: the transcript holds no delivery record)` : '';
    out.push(
      `FAIL: ${plural(lost, 'hook output')} in ${plural(sessions, 'session')} ` +
        `${lost === 1 ? 'was' : 'were'} over the ${formatCount(OUTPUT_CAP_CHARS)}-character cap ` +
        `and saved to a file instead of reaching the model, although the hooks reported success${bySize}.\n`,
    );
  } else if (incomplete(result)) {
    // No OK: the UNREADABLE or INCOMPLETE line below says what was not read.
  } else if (totals.records === 0) {
    out.push('OK: no hook records found.\n');
  } else if (totals.unconfirmed > 0) {
    out.push(`OK: no hook output is known to have been saved to a file (none of known size over ${formatCount(OUTPUT_CAP_CHARS)} characters).\n`);
  } else {
    out.push(`OK: every hook output reached the model whole (none over ${formatCount(OUTPUT_CAP_CHARS)} characters).\n`);
  }
  if (incomplete(result)) {
    const unreadable = result.files.filter((f) => f.error !== undefined).length;
    const cutOff = result.files.filter((f) => f.truncatedLastLine).length;
    // Those of a file unreadable as a transcript are said by "could not be read".
    const unparsable = unparsableInside({ ...result, files: result.files.filter((f) => f.error === undefined) });
    const limit = options.maxLineBytes === undefined ? '' : ` of ${formatCount(options.maxLineBytes)} bytes`;
    const parts = [
      totals.oversizedLines > 0 ? `${plural(totals.oversizedLines, 'line')} over the line limit${limit} ${totals.oversizedLines === 1 ? 'was' : 'were'} skipped unread (--max-line-bytes)` : '',
      unreadable > 0 ? `${plural(unreadable, 'file')} could not be read` : '',
      cutOff > 0 ? `${plural(cutOff, 'file')} ended in a line cut off mid-write (a transcript still being written: scan it again once written)` : '',
      unparsable > 0 ? `${plural(unparsable, 'line')} could not be parsed` : '',
    ].filter(Boolean);
    // A file that could not be read is bad input (exit 2), said in the word of that status; the rest, INCOMPLETE (4).
    out.push(`${unreadable > 0 ? 'UNREADABLE' : 'INCOMPLETE'}: ${parts.join(' and ')}; a hook output there may have been saved to a file without this scan seeing it.\n`);
  }
  if (totals.unconfirmed > 0) {
    out.push(
      `UNKNOWN: ${plural(totals.unconfirmed, 'output string')} of JSON hook output ${totals.unconfirmed === 1 ? 'has' : 'have'} no delivery record ` +
        'in the transcript (neither delivered nor persisted as far as it shows).\n',
    );
  }
  return out.join('');
}
