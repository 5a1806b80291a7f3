import { h, select, uid } from './dom.ts';

/**
 * Light or dark (issue 40): the page follows the system's prefers-color-scheme until the operator picks a
 * theme in the header; the pick is remembered in this browser (localStorage) and set as html[data-theme].
 */
export const THEME_STORAGE_KEY = 'pcg-console-theme';
const CHOICES = [
  ['system', 'Follow the system'],
  ['light', 'Light'],
  ['dark', 'Dark'],
] as const;
type Choice = (typeof CHOICES)[number][0];

function stored(): Choice {
  try {
    const value = localStorage.getItem(THEME_STORAGE_KEY);
    return value === 'light' || value === 'dark' ? value : 'system';
  } catch {
    return 'system';
  }
}

function apply(choice: Choice): void {
  if (choice === 'system') document.documentElement.removeAttribute('data-theme');
  else document.documentElement.setAttribute('data-theme', choice);
}

function remember(choice: Choice): void {
  try {
    if (choice === 'system') localStorage.removeItem(THEME_STORAGE_KEY);
    else localStorage.setItem(THEME_STORAGE_KEY, choice);
  } catch {
    // A browser that keeps nothing still switches for this visit.
  }
}

/** Applies the remembered theme and draws the switch into `holder`. */
export function renderThemeSwitch(holder: HTMLElement): void {
  const choice = stored();
  apply(choice);
  const control = select(CHOICES, choice);
  control.id = uid('theme');
  control.addEventListener('change', () => {
    const picked = CHOICES.find(([value]) => value === control.value)?.[0] ?? 'system';
    apply(picked);
    remember(picked);
  });
  holder.replaceChildren(h('label', { htmlFor: control.id }, 'Theme'), control);
}
