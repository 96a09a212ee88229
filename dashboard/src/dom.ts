/**
 * The only way the dashboard builds DOM: every string becomes a text node or an attribute value, never markup,
 * so a hook named `<img src=x onerror=alert(1)>` shows as exactly that text. A client string shown inline beside
 * other text goes through breakable (or format.ts's isolated where no markup can go), so its bidi controls stay inside it.
 */
export type Child = Node | string | number | null | undefined | false;

export interface Attrs {
  [name: string]: string | number | boolean | undefined | null | ((ev: Event) => void);
}

/** Creates an element; `on*` function attributes become listeners, other attributes are set as plain values. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs?: Attrs | null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (typeof value === 'function') {
      if (!name.startsWith('on')) throw new Error(`attribute ${name} cannot take a function`);
      el.addEventListener(name.slice(2).toLowerCase(), value);
      continue;
    }
    // A string never becomes an inline handler: those would be the one way data could turn into code.
    if (name.toLowerCase().startsWith('on')) throw new Error(`inline handler ${name} refused`);
    el.setAttribute(name, value === true ? '' : String(value));
  }
  append(el, ...children);
  return el;
}

/** Appends children, turning strings and numbers into text nodes. */
export function append(parent: Node, ...children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    parent.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
}

/** Replaces every child of `parent`. */
export function replace(parent: Node, ...children: Child[]): void {
  while (parent.firstChild) parent.removeChild(parent.firstChild);
  append(parent, ...children);
}

/**
 * Makes `children` the children of `parent`, in this order, moving only those out of place: a node moved leaves the
 * document for a moment, which scrolls a box in it back to its start, so what stays where it was is left alone.
 */
export function arrange(parent: Node, ...children: Node[]): void {
  const wanted = new Set(children);
  for (const node of [...parent.childNodes]) if (!wanted.has(node)) parent.removeChild(node);
  children.forEach((child, i) => {
    const there = parent.childNodes[i] ?? null;
    if (there !== child) parent.insertBefore(child, there);
  });
}

/**
 * The box a table scrolls sideways in on a narrow screen: it takes the keyboard focus (the arrow keys scroll it)
 * and is named after its table, so a keyboard-only reader reaches the last columns too.
 */
export function scrollBox(label: string, ...children: Child[]): HTMLDivElement {
  return h('div', { class: 'table-scroll', tabindex: 0, role: 'region', 'aria-label': label }, ...children);
}

/** A table from a header row and rows of cells (strings are text). */
export function table(caption: string, headers: Child[], rows: Child[][], attrs?: Attrs): HTMLTableElement {
  return h('table', attrs ?? null,
    h('caption', null, caption),
    h('thead', null, h('tr', null, ...headers.map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', null, ...rows.map((r) => h('tr', null, ...r.map((c) => h('td', null, c))))),
  );
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** A run longer than this without a separator may also wrap inside, every this many characters. */
const LONGEST_RUN = 24;

/**
 * A client string (a hook name, a dimension value) as text that may wrap after its separators (":", "/", "_",
 * ".", "-", "|", ",", ";", "=", "+", "&", "@") when a column is narrow, and inside a run only when it is longer
 * than LONGEST_RUN: "SessionStart:" over "startup", never "claud" over "e-code"; a command line like
 * "jq|sort|uniq" wraps at its pipes instead of pushing the table's other columns off a phone's screen. In a
 * <bdi>: a name holding a right-to-left override (U+202E) or an unbalanced right-to-left run reorders only
 * itself, never the status badge, figures or buttons drawn after it on the same line.
 */
export function breakable(text: string): HTMLElement {
  const bdi = document.createElement('bdi');
  for (const part of text.split(/(?<=[-:/_.|,;=+&@])/)) {
    for (let i = 0; i < part.length;) {
      let end = Math.min(part.length, i + LONGEST_RUN);
      // Never between the two halves of an emoji (a surrogate pair): the cut goes before it.
      if (end < part.length && end - 1 > i && isHighSurrogate(part.charCodeAt(end - 1))) end--;
      if (bdi.childNodes.length) bdi.appendChild(document.createElement('wbr'));
      bdi.appendChild(document.createTextNode(part.slice(i, end)));
      i = end;
    }
  }
  return bdi;
}
