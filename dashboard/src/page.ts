/** What every page offers the shell: load or refresh its data in place, show a first-load error, and clean up. */
import type { AlertSummary } from '../../shared/src/api.ts';
import type { Attrs, Child } from './dom.ts';
import type { ViewState } from './state.ts';

export interface PageContext {
  state: ViewState;
  /** Goes to a URL inside the dashboard (history entry, no reload). */
  navigate(url: string, opts?: { replace?: boolean }): void;
  /** An in-app link (plain clicks navigate without a reload; the href stays shareable). */
  link(url: string, attrs: Attrs | null, ...children: Child[]): HTMLAnchorElement;
  /**
   * Dimension names the API accepts as filters and breakdowns. Never rejects: while the API cannot be reached it
   * waits, asked again at each refresh, and resolves once an answer comes.
   */
  dimensions(): Promise<string[]>;
  /**
   * Puts a change the page made in place (a search typed) into the URL without a history entry or drawing the
   * page again; the header's links and controls follow it.
   */
  replaceUrl(url: string): void;
  /** Fetches the page's data again now, as Refresh now does. */
  refresh(): void;
  /**
   * What was typed in `form` was sent and taken (a silence made): a reload to a new version no longer waits for it.
   * Not for a form sent and refused, whose text stays to be corrected; nor for one whose sending draws a new view
   * (a filter added), whose fields are gone.
   */
  sent(form: HTMLFormElement): void;
  /**
   * Fetches again only the part of the page a change made in place depends on (the overview's search: its hooks),
   * with the busy state and failure banner of a refresh; a refresh under way is asked again whole instead. The
   * age of the data shown and the next refresh stay as they were.
   */
  update(part: (signal: AbortSignal) => Promise<void>): void;
  /**
   * The firing alerts the shell asked for with this refresh (the header's count is of those): a page marks what
   * they are about without asking again. Never rejects: null when the alerts API could not answer.
   */
  firing(): Promise<AlertSummary[] | null>;
}

export interface Page {
  /** Fetches and draws the data; throws when the API fails (the shell shows the error, the old data stays). */
  refresh(signal: AbortSignal): Promise<void>;
  destroy(): void;
}

export type PageFactory = (root: HTMLElement, ctx: PageContext) => Page;
