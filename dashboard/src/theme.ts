/**
 * Light and dark: the page follows `prefers-color-scheme` unless the visitor picks one (kept in localStorage).
 * Colours live in CSS custom properties; charts read them when they draw, so they switch with the page.
 */
export type ThemeChoice = 'auto' | 'light' | 'dark';
const KEY = 'hookwatch.theme';

function stored(): ThemeChoice {
  try {
    const v = localStorage.getItem(KEY);
    return v === 'light' || v === 'dark' ? v : 'auto';
  } catch {
    return 'auto';
  }
}

/** The visitor's choice. */
export function themeChoice(): ThemeChoice {
  return stored();
}

/** Applies and remembers a choice ('auto' follows the system). */
export function setTheme(choice: ThemeChoice): void {
  try {
    if (choice === 'auto') localStorage.removeItem(KEY);
    else localStorage.setItem(KEY, choice);
  } catch {
    // Storage refused (private mode): the choice still applies to this page.
  }
  applyTheme(choice);
}

export function applyTheme(choice: ThemeChoice = stored()): void {
  if (choice === 'auto') delete document.documentElement.dataset['theme'];
  else document.documentElement.dataset['theme'] = choice;
}

/**
 * A colour from the stylesheet (e.g. '--text') as the canvas can use it: resolved through a probe element,
 * since the property itself holds a light-dark() pair that only CSS understands.
 */
export function cssColor(name: string): string {
  const probe = document.createElement('span');
  probe.style.color = `var(${name})`;
  probe.hidden = true;
  document.body.appendChild(probe);
  const color = getComputedStyle(probe).color;
  probe.remove();
  return color || '#888';
}
