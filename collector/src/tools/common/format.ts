/** Formatting shared by the tools' human-readable reports. */
import { printable } from '../../../../shared/src/printable.ts';

export { printable };

const numberFormat = new Intl.NumberFormat('en-US');

/** 12000 -> "12,000"; negative numbers keep their sign. */
export function formatCount(n: number): string {
  return numberFormat.format(n);
}

/**
 * Hook output (a preview, stderr, a whole output) as a block of a report: its lines kept, each indented under the
 * block's heading so none reads as a line of the report (a verdict), and what would not read as itself, a terminal
 * escape or a bidirectional override, written out.
 */
export function outputBlock(text: string): string {
  return printable(text, { keepLines: true }).replace(/^/gm, '    ');
}

/** Renders rows as a left-aligned text table with a header row; every cell is already a string, printed as printable() gives it. */
export function renderTable(header: readonly string[], rawRows: readonly (readonly string[])[], indent = ''): string {
  const rows = rawRows.map((row) => row.map((cell) => printable(cell)));
  const widths = header.map((h, column) => Math.max(h.length, ...rows.map((row) => (row[column] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    indent +
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n') + '\n';
}

/**
 * The first `n` UTF-16 code units of `text`, without leaving a lone high surrogate at the end (an emoji cut in
 * half would print as garbage and is invalid in JSON output).
 */
export function headCodeUnits(text: string, n: number): string {
  if (text.length <= n) return text;
  const head = text.slice(0, n);
  const last = head.charCodeAt(head.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? head.slice(0, -1) : head;
}

/** Number of Unicode code points (what a user would call characters), as opposed to UTF-16 code units. */
export function countCodePoints(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    count++;
  }
  return count;
}

/** 1536 -> "1.5 KiB"; for file sizes in reports. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** "1 file" / "2 files". */
export function plural(n: number, singular: string, pluralForm = `${singular}s`): string {
  return `${formatCount(n)} ${n === 1 ? singular : pluralForm}`;
}
