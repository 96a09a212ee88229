/**
 * Chart.js, loaded locally as /vendor/chart.umd.min.js, behind one helper that keeps each chart paired with its
 * text alternative: an aria-label summary and a data table holding the very numbers the chart draws.
 */
import type { Chart as ChartJs, ChartConfiguration } from 'chart.js';
import { h, replace, type Child } from './dom.ts';

type ChartCtor = typeof ChartJs;

function ctor(): ChartCtor {
  const c = (window as unknown as { Chart?: ChartCtor }).Chart;
  if (!c) throw new Error('Chart.js did not load (/vendor/chart.umd.min.js)');
  return c;
}

let configured = false;
function configure(C: ChartCtor): void {
  if (configured) return;
  configured = true;
  // Refreshes redraw in place; animation would only delay the numbers and make screenshots vary.
  C.defaults.animation = false;
  C.defaults.maintainAspectRatio = false;
  C.defaults.font.family = 'system-ui, sans-serif';
}

/** The palette, chosen to stay apart for common colour-vision deficiencies (Okabe-Ito). */
export const COLORS = {
  additionalContext: '#0072B2',
  stdout: '#E69F00',
  systemMessage: '#009E73',
  initialUserMessage: '#CC79A7',
  cap: '#D55E00',
  preview: '#56B4E9',
  persisted: '#D55E00',
  success: '#009E73',
  executions: '#555555',
  fit: '#CC79A7',
} as const;

/** A chart panel: title, canvas (role img + summary), and a collapsible data table. */
export class ChartPanel {
  readonly element: HTMLElement;
  readonly canvas: HTMLCanvasElement;
  private readonly summary: HTMLParagraphElement;
  private readonly tableHolder: HTMLDivElement;
  private chart: ChartJs | undefined;

  readonly id: string;

  constructor(id: string, title: string, description: string) {
    this.id = id;
    this.canvas = h('canvas', { id: `chart-${id}`, role: 'img', 'aria-label': title });
    this.summary = h('p', { class: 'chart-summary', id: `chart-${id}-summary` });
    this.tableHolder = h('div', { class: 'table-scroll' });
    this.element = h('section', { class: 'panel chart-panel', 'aria-labelledby': `chart-${id}-title`, 'data-chart': id },
      h('h3', { id: `chart-${id}-title` }, title),
      h('p', { class: 'hint' }, description),
      h('div', { class: 'chart-box' }, this.canvas),
      this.summary,
      h('details', { class: 'chart-data' }, h('summary', null, 'Data table'), this.tableHolder),
    );
    this.canvas.setAttribute('aria-describedby', `chart-${id}-summary`);
  }

  /** Draws (or redraws in place) with a fresh config, summary sentence and data table. */
  render(config: ChartConfiguration, summary: string, dataTable: HTMLTableElement | Child): void {
    const C = ctor();
    configure(C);
    this.summary.textContent = summary;
    this.canvas.setAttribute('aria-label', summary);
    replace(this.tableHolder, dataTable);
    if (this.chart && (this.chart.config as { type?: string }).type === config.type) {
      this.chart.data = config.data;
      if (config.options) this.chart.options = config.options;
      this.chart.update('none');
      return;
    }
    this.chart?.destroy();
    this.chart = new C(this.canvas, config);
  }

  destroy(): void {
    this.chart?.destroy();
    this.chart = undefined;
  }
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
    fill: false,
  };
}
