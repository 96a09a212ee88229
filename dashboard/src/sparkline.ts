/**
 * A hook row's sparkline: the largest output per bucket against the 10,000 cap (dashed), buckets with
 * persisted outputs marked. Inline SVG, not a chart per row: a thousand rows draw in milliseconds.
 */
import { OUTPUT_CAP_CHARS } from '../../shared/src/cliff.ts';

const NS = 'http://www.w3.org/2000/svg';
export const SPARK_WIDTH = 120;
export const SPARK_HEIGHT = 28;

function el<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>): SVGElementTagNameMap[K] {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

/** Where each bucket sits: x of bucket i, y of a size. Pure, for the tests and the click handler alike. */
export function sparkGeometry(largest: readonly (number | null)[]): { x(i: number): number; y(v: number): number; max: number; index(px: number): number } {
  const peak = Math.max(0, ...largest.map((v) => v ?? 0));
  const max = Math.max(OUTPUT_CAP_CHARS * 1.1, peak * 1.05);
  const n = Math.max(1, largest.length);
  const step = SPARK_WIDTH / n;
  return {
    x: (i) => step * (i + 0.5),
    y: (v) => SPARK_HEIGHT - 2 - (v / max) * (SPARK_HEIGHT - 4),
    max,
    index: (px) => Math.min(n - 1, Math.max(0, Math.floor(px / step))),
  };
}

/**
 * The sparkline; `label` is its text alternative. `partial` (partialTitles: a title per bucket the range cuts,
 * null for a whole one) marks the buckets that cover less time than the others, the last one still filling in a
 * range ending now: the line into and out of them is dashed and their point hollow, so a lower value there does
 * not read as a dip.
 */
export function sparkline(largest: readonly (number | null)[], persisted: readonly number[], label: string, partial: readonly (string | null)[] = []): SVGSVGElement {
  const g = sparkGeometry(largest);
  const svg = el('svg', { class: 'spark', width: SPARK_WIDTH, height: SPARK_HEIGHT, viewBox: `0 0 ${SPARK_WIDTH} ${SPARK_HEIGHT}`, role: 'img', 'aria-label': label });
  svg.appendChild(el('title', {})).textContent = label;
  svg.dataset['partial'] = partial.filter((t) => t !== null).join('; ');
  const capY = g.y(OUTPUT_CAP_CHARS);
  svg.appendChild(el('line', { class: 'spark-cap', x1: 0, x2: SPARK_WIDTH, y1: capY, y2: capY }));
  const cut = (i: number): boolean => (partial[i] ?? null) !== null;
  const at = (i: number): { cx: string; cy: string } => ({ cx: g.x(i).toFixed(1), cy: g.y(largest[i] ?? 0).toFixed(1) });
  const point = (i: number): string => `${at(i).cx},${at(i).cy}`;
  // Unknown buckets are gaps: one polyline per run of known values, split where a segment touches a partial
  // bucket (dashed) or leaves it (solid again).
  let run: number[] = [];
  const flush = (): void => {
    if (run.length === 1) {
      const i = run[0] ?? 0;
      if (!cut(i)) svg.appendChild(el('circle', { class: 'spark-dot', ...at(i), r: 1.5 }));
    }
    let piece: number[] = [];
    let dashed = false;
    const draw = (): void => {
      if (piece.length > 1) svg.appendChild(el('polyline', { class: dashed ? 'spark-line spark-line-partial' : 'spark-line', points: piece.map(point).join(' ') }));
    };
    for (let k = 1; k < run.length; k++) {
      const [a, b] = [run[k - 1] ?? 0, run[k] ?? 0];
      const d = cut(a) || cut(b);
      if (piece.length > 0 && d !== dashed) {
        draw();
        piece = [];
      }
      if (piece.length === 0) piece.push(a);
      piece.push(b);
      dashed = d;
    }
    draw();
    run = [];
  };
  largest.forEach((v, i) => {
    if (v === null) flush();
    else run.push(i);
  });
  flush();
  largest.forEach((v, i) => {
    if (v !== null && cut(i)) svg.appendChild(el('circle', { class: 'spark-partial', ...at(i), r: 2, 'data-bucket': i }));
  });
  persisted.forEach((p, i) => {
    if (p > 0) {
      const x = g.x(i);
      const y = g.y(largest[i] ?? OUTPUT_CAP_CHARS);
      svg.appendChild(el('path', { class: 'spark-persisted', d: `M${(x - 3).toFixed(1)},${(y + 3).toFixed(1)} L${x.toFixed(1)},${(y - 3).toFixed(1)} L${(x + 3).toFixed(1)},${(y + 3).toFixed(1)} Z`, 'data-bucket': i }));
    }
  });
  return svg;
}
