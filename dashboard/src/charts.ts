/**
 * Chart.js, loaded locally as /vendor/chart.umd.min.js, behind one helper that keeps each chart paired with its
 * text alternative: a summary sentence describing it and a data table holding the very numbers the chart draws. Time
 * charts can be zoomed by dragging across them, or from the keyboard (the page turns the bounds into a URL range),
 * and can carry shaded bands (alert timelines).
 */
import type { Chart as ChartJs, ChartConfiguration, LayoutItem, Plugin, TooltipItem, layouts } from 'chart.js';
import { h, replace, scrollBox, type Child } from './dom.ts';
import { OUTPUT_CAP_CHARS } from '../../shared/src/cliff.ts';
import { LOCALE, bucketAxisTitle, bucketTooltipTitle, chars, headroomText, num, partialNote } from './format.ts';
import { cssColor } from './theme.ts';

type ChartCtor = typeof ChartJs & { layouts: typeof layouts };

function ctor(): ChartCtor {
  const c = (window as unknown as { Chart?: ChartCtor }).Chart;
  if (!c) throw new Error('Chart.js did not load (/vendor/chart.umd.min.js)');
  return c;
}

/** Chart.js defaults that follow the page: called before every draw, so a theme switch recolours the axes. */
function configure(C: ChartCtor): void {
  // Refreshes redraw in place; animation would only delay the numbers and make screenshots vary.
  C.defaults.animation = false;
  C.defaults.maintainAspectRatio = false;
  C.defaults.font.family = 'system-ui, sans-serif';
  C.defaults.locale = LOCALE;
  C.defaults.color = cssColor('--muted');
  C.defaults.borderColor = cssColor('--grid');
  // Lines show as lines in the legend, bars as boxes: a dashed cap is not a filled square.
  C.defaults.plugins.legend.labels.usePointStyle = true;
}

/**
 * The palette, chosen to stay apart for common colour-vision deficiencies (Okabe-Ito), one orange-red per chart
 * at most (persisted outputs); the cap and the preview are drawn in the text colours, dashed.
 */
export const COLORS = {
  additionalContext: '#0072B2',
  stdout: '#009E73',
  systemMessage: '#CC79A7',
  initialUserMessage: '#56B4E9',
  persisted: '#D55E00',
  success: '#009E73',
  executions: '#7a8791',
  executionsWithPersisted: '#CC79A7',
  fit: '#E69F00',
  /** Other hooks grouped, in the fleet chart. */
  other: '#9aa5b1',
} as const;

/** Colours for the top hooks in the fleet chart (persisted keeps its own colour elsewhere). */
export const SERIES_COLORS = ['#D55E00', '#CC79A7', '#009E73', '#E69F00', '#56B4E9'] as const;

/** The cap and preview reference colours of the current theme. */
export function capColor(): string {
  return cssColor('--text');
}
export function previewColor(): string {
  return cssColor('--muted');
}

/** A y axis for sizes: from 0 to above the cap (the cap line never sits on the frame). */
export function sizeAxis(peak: number | null, title = 'characters (UTF-16 code units)'): Record<string, unknown> {
  return { beginAtZero: true, suggestedMax: Math.max(11_000, Math.ceil(((peak ?? 0) * 1.08) / 1000) * 1000), title: { display: true, text: title }, ticks: { precision: 0 } };
}

/** The time axis of buckets of `stepSeconds`, titled as bucketAxisTitle has it. */
export function bucketAxis(stepSeconds: number): Record<string, unknown> {
  const title = bucketAxisTitle(stepSeconds);
  return title === null ? {} : { title: { display: true, text: title } };
}

/**
 * Tooltip callbacks titling a hovered bucket of `stepSeconds` as bucketTooltipTitle has it ("30/11 (UTC)"), or a
 * partial one by the time it covers (`partial`, from partialTitles); a bucket with nothing to list has no title, so
 * no tooltip shows (not a box reading "(UTC)").
 */
export function bucketTitle(stepSeconds: number, partial: readonly (string | null)[] = []): { title: (items: readonly { label: string; dataIndex: number }[]) => string } {
  return { title: (items) => (items[0] ? partial[items[0].dataIndex] ?? bucketTooltipTitle(items[0].label, stepSeconds) : '') };
}

/**
 * A size as a tooltip line reads it: "largest stdout: 12,578 chars (2,578 chars over the cap)"; of the measured
 * executions only (`unmeasured`: others sent no size data), "at least 400 chars (at most 9,600 chars below the cap)".
 */
export function sizeLine(label: string, n: number | null, unmeasured = false): string {
  return n === null ? `${label}: unknown` : `${label}: ${unmeasured ? 'at least ' : ''}${chars(n)} (${headroomText(OUTPUT_CAP_CHARS - n, unmeasured)})`;
}

/** A y axis for counts: whole numbers only. */
export function countAxis(title = 'count'): Record<string, unknown> {
  return { beginAtZero: true, suggestedMax: 1, title: { display: true, text: title }, ticks: { precision: 0 } };
}

/** A shaded span on a time chart, between two bucket positions (fractional), labelled. */
export interface Band {
  fromIndex: number;
  toIndex: number;
  label: string;
  color: string;
}

/** Where a label was drawn on a chart's canvas, in CSS pixels. */
interface LabelBox {
  text: string;
  left: number;
  top: number;
  right: number;
  bottom: number;
}

/** A chart panel: title, canvas (an image named by the title, described by the summary), and a collapsible data table. */
export class ChartPanel {
  readonly element: HTMLElement;
  readonly canvas: HTMLCanvasElement;
  private readonly summary: HTMLParagraphElement;
  private readonly hint: HTMLParagraphElement;
  private readonly tableHolder: HTMLDivElement;
  private readonly box: HTMLDivElement;
  private readonly selection: HTMLDivElement;
  private chart: ChartJs | undefined;
  private bands: Band[] = [];
  /** Per bucket, its partialTitles title when the range cuts it, null when whole. */
  private partial: readonly (string | null)[] = [];
  private zoom: ((fromIndex: number, toIndex: number) => void) | undefined;
  private zoomOut: (() => void) | undefined;
  /** The bucket picked with the keyboard (highlighted, its tooltip shown); null with none. */
  private cursor: number | null = null;
  /** Where the bucket picked is said to a screen reader, once the key is let go. */
  private readonly said: HTMLParagraphElement;

  readonly id: string;

  constructor(id: string, title: string, description: string, opts: { heading?: 'h2' | 'h3' } = {}) {
    this.id = id;
    this.canvas = h('canvas', { id: `chart-${id}`, role: 'img', 'aria-label': title });
    this.summary = h('p', { class: 'chart-summary', id: `chart-${id}-summary` });
    this.hint = h('p', { class: 'hint' }, description);
    this.tableHolder = scrollBox(`${title}: data table`);
    this.selection = h('div', { class: 'zoom-selection', hidden: true });
    this.said = h('p', { class: 'sr-only', role: 'status', id: `chart-${id}-said` });
    this.box = h('div', { class: 'chart-box' }, this.canvas, this.selection);
    this.element = h('section', { class: 'panel chart-panel', 'aria-labelledby': `chart-${id}-title`, 'data-chart': id },
      h(opts.heading ?? 'h2', { id: `chart-${id}-title`, class: 'chart-title' }, title),
      this.hint,
      this.box,
      this.summary,
      h('details', { class: 'chart-data' }, h('summary', null, 'Data table'), this.tableHolder),
    );
    this.canvas.setAttribute('aria-describedby', `chart-${id}-summary`);
  }

  /** The line under the title saying what the chart draws, when that changes with what is known (alerts). */
  setDescription(description: string): void {
    if (this.hint.textContent !== description) this.hint.textContent = description;
  }

  /** Shaded spans drawn behind the data (e.g. when alerts fired); set before render. */
  setBands(bands: Band[]): void {
    this.bands = bands;
    this.canvas.dataset['bands'] = bands.map((b) => b.label).join('; ');
  }

  /**
   * Marks the buckets the range cuts (partialTitles: a title per partial bucket, null for a whole one); set before
   * render. Their bars are drawn hatched and lighter, the line segments into them dashed, and the summary names them,
   * so a bucket still filling does not read as a dip.
   */
  setPartial(titles: readonly (string | null)[]): void {
    this.partial = titles;
    this.canvas.dataset['partial'] = titles.filter((t) => t !== null).join('; ');
  }

  /**
   * Lets a drag across a category (bucket) axis choose a range: `onZoom` gets the first and last bucket index
   * dragged over. A press without a drag stays a click. The keyboard does the same (enableKeys); `onZoomOut`
   * widens the range.
   */
  enableZoom(onZoom: (fromIndex: number, toIndex: number) => void, onZoomOut?: () => void): void {
    this.zoomOut = onZoomOut;
    if (this.zoom) {
      this.zoom = onZoom;
      return;
    }
    this.zoom = onZoom;
    this.box.classList.add('zoomable');
    this.enableKeys();
    let startX: number | null = null;
    const x = (ev: PointerEvent): number => ev.clientX - this.canvas.getBoundingClientRect().left;
    const area = (): { left: number; right: number } | undefined => this.chart?.chartArea;
    this.canvas.addEventListener('pointerdown', (ev) => {
      if (ev.button !== 0 || !this.chart) return;
      const a = area();
      const px = x(ev);
      if (!a || px < a.left || px > a.right) return;
      startX = px;
    });
    this.canvas.addEventListener('pointermove', (ev) => {
      if (startX === null) return;
      const a = area();
      if (!a) return;
      const px = Math.min(Math.max(x(ev), a.left), a.right);
      if (Math.abs(px - startX) < 4) return;
      this.selection.hidden = false;
      this.selection.style.left = `${Math.min(px, startX)}px`;
      this.selection.style.width = `${Math.abs(px - startX)}px`;
      this.selection.style.top = `${this.chart?.chartArea.top ?? 0}px`;
      this.selection.style.height = `${(this.chart?.chartArea.bottom ?? 0) - (this.chart?.chartArea.top ?? 0)}px`;
    });
    const end = (ev: PointerEvent): void => {
      if (startX === null) return;
      const from = startX;
      startX = null;
      this.selection.hidden = true;
      const a = area();
      const scale = this.chart?.scales['x'];
      if (!a || !scale || !this.zoom) return;
      const to = Math.min(Math.max(x(ev), a.left), a.right);
      if (Math.abs(to - from) < 8) return;
      const i = Math.round(scale.getValueForPixel(Math.min(from, to)) ?? 0);
      const j = Math.round(scale.getValueForPixel(Math.max(from, to)) ?? 0);
      this.zoom(Math.max(0, i), Math.max(i, j));
    };
    this.canvas.addEventListener('pointerup', end);
    this.canvas.addEventListener('pointerleave', (ev) => {
      if (startX !== null) end(ev);
    });
  }

  /**
   * The keyboard's way to what the pointer does: the focused chart takes ← and → (Home, End) to pick a bucket,
   * highlighted with its tooltip and said once the key is let go (holding a key down says only where it stopped);
   * Enter zooms to that bucket, + zooms in around it, − zooms out, Escape lets it go. Tab leaves the chart as any
   * other control, and the picked bucket with it. The keys are written under the chart.
   */
  private enableKeys(): void {
    const keys = h('p', { class: 'hint chart-keys', id: `chart-${this.id}-keys` }, 'Keyboard: ← and → pick a bucket, Enter zooms to it, + and − zoom in and out, Esc lets go.');
    this.box.after(keys, this.said);
    this.canvas.tabIndex = 0;
    // Keys reach the chart, not a screen reader's browse mode.
    this.canvas.setAttribute('role', 'application');
    this.canvas.setAttribute('aria-describedby', `chart-${this.id}-summary chart-${this.id}-keys`);
    this.canvas.addEventListener('keydown', (ev) => {
      if (!ev.altKey && !ev.ctrlKey && !ev.metaKey && this.onKey(ev.key)) ev.preventDefault();
    });
    this.canvas.addEventListener('keyup', (ev) => {
      if (MOVE_KEYS.includes(ev.key)) this.say();
    });
    this.canvas.addEventListener('blur', () => this.pick(null));
    // The pointer takes over: the bucket the keys picked is let go, so one bucket shows highlighted, not two, and
    // Enter zooms to nothing the pointer has moved away from.
    this.canvas.addEventListener('pointermove', () => {
      if (this.cursor === null) return;
      this.cursor = null;
      this.chart?.draw();
    });
  }

  /** Does what `key` asks on the focused chart; false for a key it leaves to the page. */
  private onKey(key: string): boolean {
    const n = this.chart?.data.labels?.length ?? 0;
    if (n === 0 || !this.zoom) return false;
    const at = this.cursor;
    switch (key) {
      case 'ArrowRight': this.pick(at === null ? 0 : Math.min(n - 1, at + 1)); return true;
      case 'ArrowLeft': this.pick(at === null ? n - 1 : Math.max(0, at - 1)); return true;
      case 'Home': this.pick(0); return true;
      case 'End': this.pick(n - 1); return true;
      case 'Enter':
        if (at === null) this.said.textContent = 'Pick a bucket with ← or → first.';
        else this.zoom(at, at);
        return true;
      case '+': case '=': this.zoom(...zoomInBuckets(n, at)); return true;
      case '-': case '_':
        if (this.zoomOut) this.zoomOut();
        return this.zoomOut !== undefined;
      case 'Escape':
        if (at === null) return false;
        this.pick(null);
        return true;
      default: return false;
    }
  }

  /** Highlights bucket `i` (none with null) as hovering it does: its bars and points, and its tooltip. */
  private pick(i: number | null): void {
    this.cursor = i;
    const chart = this.chart;
    if (!chart) return;
    const items = i === null ? [] : chart.data.datasets.flatMap((_d, di) => (chart.isDatasetVisible(di) ? [{ datasetIndex: di, index: i }] : []));
    const area = chart.chartArea;
    chart.setActiveElements(items);
    chart.tooltip?.setActiveElements(items, { x: i === null ? 0 : (chart.scales['x']?.getPixelForValue(i) ?? 0), y: (area.top + area.bottom) / 2 });
    chart.update('none');
  }

  /** Says the bucket picked as its tooltip reads (a bucket without one by its label), unless that is what was said last. */
  private say(): void {
    const chart = this.chart;
    const i = this.cursor;
    if (!chart || i === null) return;
    const t = chart.tooltip;
    const lines = t && t.opacity > 0 ? [t.title.join(' '), ...t.body.flatMap((b) => b.lines)].filter((l) => l !== '') : [];
    const text = lines.length > 0 ? lines.join('; ') : `${this.partial[i] ?? String(chart.data.labels?.[i] ?? '')}: nothing drawn in this bucket`;
    if (this.said.textContent !== text) this.said.textContent = text;
  }

  /** Draws (or redraws in place) with a fresh config, summary sentence and data table. */
  render(config: ChartConfiguration, summary: string, dataTable: HTMLTableElement | Child): void {
    const C = ctor();
    configure(C);
    // The canvas is named by its title and described by the summary beside it: a screen reader reads the summary
    // once, not once as the name and again as the description.
    const note = partialNote(this.partial);
    this.summary.textContent = note === undefined ? summary : `${summary} ${note.charAt(0).toUpperCase()}${note.slice(1)}.`;
    replace(this.tableHolder, dataTable);
    dashPartialSegments(config, this.partial);
    if (this.chart && (this.chart.config as { type?: string }).type === config.type) {
      this.chart.data = config.data;
      if (config.options) this.chart.options = config.options;
      this.chart.update('none');
    } else {
      this.chart?.destroy();
      this.chart = new C(this.canvas, { ...config, plugins: [...(config.plugins ?? []), this.bandPlugin(), this.partialPlugin()] } as ChartConfiguration);
    }
    // A bucket picked stays picked across a refresh (the last one if there are fewer now), without being said again.
    if (this.cursor !== null) this.pick(Math.min(this.cursor, (this.chart.data.labels?.length ?? 1) - 1));
  }

  /**
   * Draws the bands under the datasets, and the bucket picked from the keyboard. Each band's label goes in a lane
   * the chart keeps for them between the legend and the plot, a line per band up to BAND_LABEL_ROWS (labels never
   * need more lines than there are bands), so no point, line or grid line ever runs through a label's letters; a
   * swatch of the band's colour starts the label, and a strip of it tops the band just below.
   */
  private bandPlugin(): Plugin & { drawnLabels: LabelBox[] } {
    // Closest to the plot of the boxes above it (the legend weighs 1000); Chart.js reads a box's options (none here).
    const lane: LayoutItem & { options: object } = {
      position: 'top', weight: 0, fullSize: false, width: 0, height: 0, left: 0, top: 0, right: 0, bottom: 0, options: {},
      isHorizontal: () => true,
      update: (width) => {
        lane.width = width;
        lane.height = bandLaneHeight(this.bands.length);
      },
      draw: () => undefined,
    };
    const plugin = {
      id: 'hookwatchBands',
      /** Where each label was drawn last, as a reader sees it (the page's tests measure it). */
      drawnLabels: [] as LabelBox[],
      start: (chart: ChartJs) => ctor().layouts.addBox(chart, lane),
      stop: (chart: ChartJs) => ctor().layouts.removeBox(chart, lane),
      beforeDatasetsDraw: (chart: ChartJs) => {
        const scale = chart.scales['x'];
        if (!scale) return;
        const { ctx, chartArea } = chart;
        ctx.save();
        if (this.cursor !== null) {
          const x0 = Math.max(chartArea.left, scale.getPixelForValue(this.cursor - 0.5));
          const x1 = Math.min(chartArea.right, scale.getPixelForValue(this.cursor + 0.5));
          ctx.fillStyle = cssColor('--focus');
          ctx.globalAlpha = 0.16;
          ctx.fillRect(x0, chartArea.top, x1 - x0, chartArea.bottom - chartArea.top);
          ctx.globalAlpha = 1;
        }
        ctx.font = '11px system-ui, sans-serif';
        const labels: { band: Band; left: number; width: number }[] = [];
        for (const b of this.bands) {
          const x0 = Math.max(chartArea.left, scale.getPixelForValue(b.fromIndex - 0.5));
          const x1 = Math.min(chartArea.right, scale.getPixelForValue(b.toIndex + 0.5));
          if (x1 <= x0) continue;
          ctx.fillStyle = b.color;
          ctx.globalAlpha = 0.14;
          ctx.fillRect(x0, chartArea.top, x1 - x0, chartArea.bottom - chartArea.top);
          ctx.globalAlpha = 1;
          ctx.fillRect(x0, chartArea.top, x1 - x0, 4);
          labels.push({ band: b, left: x0, width: BAND_SWATCH_PX + ctx.measureText(b.label).width });
        }
        // Each label whole, in the first line where it runs into no other: bands that begin together (several
        // alerts of a hook at once) get a line each instead of one smudge.
        const text = cssColor('--text');
        plugin.drawnLabels = [];
        bandLabelRows(labels, chartArea).forEach((at, i) => {
          const label = labels[i];
          if (!at || !label) return;
          const top = lane.top + at.row * BAND_LABEL_LINE_PX;
          ctx.fillStyle = label.band.color;
          ctx.fillRect(at.x, top + 3, BAND_SWATCH_PX - 4, BAND_SWATCH_PX - 4);
          ctx.fillStyle = text;
          ctx.fillText(label.band.label, at.x + BAND_SWATCH_PX, top + 11);
          plugin.drawnLabels.push({ text: label.band.label, left: at.x, top, right: at.x + label.width, bottom: top + BAND_LABEL_LINE_PX });
        });
        ctx.restore();
      },
    };
    return plugin;
  }

  /**
   * Draws each bar of a partial bucket lighter and hatched with a dashed outline, in its own colour over the panel's:
   * the same look in both themes, and the legend (which shows no bucket) keeps the whole colour. A dataset's bars are
   * hatched as soon as that dataset is drawn, so whatever is drawn in front of them (a narrower bar, a marker) stays
   * in front.
   */
  private partialPlugin(): Plugin {
    return {
      id: 'hookwatchPartial',
      afterDatasetDraw: (chart, { meta }) => {
        if (!this.partial.some((t) => t !== null) || meta.type !== 'bar') return;
        const { ctx, chartArea } = chart;
        const panel = cssColor('--panel');
        ctx.save();
        ctx.beginPath();
        ctx.rect(chartArea.left, chartArea.top, chartArea.right - chartArea.left, chartArea.bottom - chartArea.top);
        ctx.clip();
        this.partial.forEach((t, i) => {
          const bar = meta.data[i] as unknown as { getProps(p: string[], final: boolean): { x: number; y: number; base: number; width: number }; options: { backgroundColor?: unknown } } | undefined;
          if (t === null || !bar) return;
          const { x, y, base, width } = bar.getProps(['x', 'y', 'base', 'width'], true);
          const [top, bottom] = [Math.min(y, base), Math.max(y, base)];
          if (bottom - top < 1) return;
          const color = typeof bar.options.backgroundColor === 'string' ? bar.options.backgroundColor : cssColor('--text');
          const left = x - width / 2;
          ctx.save();
          ctx.beginPath();
          ctx.rect(left, top, width, bottom - top);
          ctx.clip();
          ctx.fillStyle = panel;
          ctx.globalAlpha = 0.6;
          ctx.fillRect(left, top, width, bottom - top);
          ctx.globalAlpha = 1;
          ctx.strokeStyle = color;
          ctx.lineWidth = 1.5;
          ctx.beginPath();
          for (let d = -(bottom - top); d < width; d += 6) {
            ctx.moveTo(left + d, bottom);
            ctx.lineTo(left + d + (bottom - top), top);
          }
          ctx.stroke();
          ctx.setLineDash([3, 2]);
          ctx.strokeRect(left + 0.75, top + 0.75, width - 1.5, bottom - top - 1.5);
          ctx.restore();
        });
        ctx.restore();
      },
    };
  }

  destroy(): void {
    this.chart?.destroy();
    this.chart = undefined;
  }
}

/**
 * Dashes the line segments that run into a partial bucket, and draws its point hollow, on every line (or scatter
 * of points, one a bucket) of `config` but the reference lines (the cap is the cap in every bucket).
 */
function dashPartialSegments(config: ChartConfiguration, partial: readonly (string | null)[]): void {
  if (!partial.some((t) => t !== null)) return;
  const cut = (i: number): boolean => (partial[i] ?? null) !== null;
  for (const d of config.data.datasets as unknown as (Record<string, unknown> & { type?: string; reference?: boolean })[]) {
    if (!['line', 'scatter'].includes(d.type ?? config.type) || d.reference === true) continue;
    d['segment'] = { borderDash: (c: { p0DataIndex: number; p1DataIndex: number }) => (cut(c.p0DataIndex) || cut(c.p1DataIndex) ? [5, 4] : undefined) };
    const fill = d['backgroundColor'];
    d['pointBackgroundColor'] = (c: { dataIndex: number }) => (cut(c.dataIndex) ? cssColor('--panel') : fill);
  }
}

/** Keys that move the bucket picked on a chart. */
const MOVE_KEYS = ['ArrowLeft', 'ArrowRight', 'Home', 'End'];

/** The buckets + zooms to: half of the `n` shown (one at least), around bucket `at` (the middle with none picked). */
export function zoomInBuckets(n: number, at: number | null): [number, number] {
  const w = Math.max(1, Math.ceil(n / 2));
  const centre = at ?? Math.floor((n - 1) / 2);
  const i = Math.min(Math.max(0, centre - Math.floor(w / 2)), n - w);
  return [i, i + w - 1];
}

/**
 * Where an alert band's label starts: at the band's left edge, moved left as far as needed to end inside the plot
 * (a band that begins near the right edge would otherwise show "pe" of "persisted firing"), never left of the plot.
 */
export function bandLabelX(bandLeft: number, textWidth: number, area: { left: number; right: number }): number {
  return Math.max(area.left + 3, Math.min(bandLeft + 3, area.right - 3 - textWidth));
}

/** The height of a line of band labels, in pixels (11 px text). */
const BAND_LABEL_LINE_PX = 13;
/** Lines of band labels at most: past them a label is left out (the alert table below the chart lists every alert). */
const BAND_LABEL_ROWS = 4;
/** The width of the swatch of its band's colour before a label's text, with the space after it, in pixels. */
const BAND_SWATCH_PX = 12;

/** The height of the lane above the plot that holds the labels of `bands` bands: a line each, up to BAND_LABEL_ROWS. */
function bandLaneHeight(bands: number): number {
  const rows = Math.min(bands, BAND_LABEL_ROWS);
  return rows === 0 ? 0 : rows * BAND_LABEL_LINE_PX + 4;
}
/** Space kept between two labels on one line, in pixels. */
const BAND_LABEL_GAP_PX = 6;

/**
 * Where each band's label goes, in order: its x (bandLabelX) and its line, the first in which it runs into no
 * label placed before it; null when every line is taken there.
 */
export function bandLabelRows(labels: readonly { left: number; width: number }[], area: { left: number; right: number }): ({ x: number; row: number } | null)[] {
  const rows: { from: number; to: number }[][] = [];
  return labels.map(({ left, width }) => {
    const x = bandLabelX(left, width, area);
    let row = 0;
    while (row < BAND_LABEL_ROWS && (rows[row] ?? []).some((r) => x < r.to + BAND_LABEL_GAP_PX && r.from < x + width + BAND_LABEL_GAP_PX)) row++;
    if (row === BAND_LABEL_ROWS) return null;
    (rows[row] ??= []).push({ from: x, to: x + width });
    return { x, row };
  });
}

/** A horizontal reference line (cap, preview) as a dataset over category labels. */
export function referenceLine(label: string, value: number, count: number, color: string, dash: number[]): ChartConfiguration<'line'>['data']['datasets'][number] {
  return {
    label,
    data: Array.from({ length: count }, () => value),
    borderColor: color,
    backgroundColor: color,
    borderDash: dash,
    borderWidth: 1.5,
    pointRadius: 0,
    pointHitRadius: 0,
    pointStyle: 'line',
    fill: false,
    // Marked so the tooltip can leave it out: hovering a bucket should tell about the bucket.
    ...({ reference: true } as object),
  };
}

/**
 * Tooltip options for bucketed charts: reference lines are left out, and an empty bucket says it is empty
 * instead of listing only the cap and the preview (or nothing, on a chart without them); `line` words an item.
 */
export function bucketTooltip(executions: readonly number[], stepSeconds: number, line: (item: TooltipItem<'line'>) => string = (item) => `${item.dataset.label ?? ''}: ${num(item.raw as number)}`, partial: readonly (string | null)[] = []): Record<string, unknown> {
  const isRef = (item: TooltipItem<'line'>): boolean => (item.dataset as { reference?: boolean }).reference === true;
  const empty = (i: number): boolean => (executions[i] ?? 0) === 0;
  return {
    filter: (item: TooltipItem<'line'>, _i: number, items: TooltipItem<'line'>[]) => {
      if (!empty(item.dataIndex)) return !isRef(item) && item.raw !== null;
      // An empty bucket keeps exactly one item (a reference line's, if the chart has one), relabelled below.
      return (items.find((x) => isRef(x)) ?? items[0]) === item;
    },
    callbacks: {
      ...bucketTitle(stepSeconds, partial),
      label: (item: TooltipItem<'line'>) => (empty(item.dataIndex) ? 'no executions in this bucket' : line(item)),
    },
  };
}

/** Whether any value is above zero (a series worth drawing). */
export function anyPositive(values: readonly (number | null)[]): boolean {
  return values.some((v) => v !== null && v > 0);
}
