import { h, notice } from './dom.ts';
import { fieldErrorsOf, fieldNameOf } from './field-errors.ts';

type Control = HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement;

/** Shows `text` right under a labelled control (or clears it), tied to it for screen readers. */
export function showFieldError(control: Control, text: string | null): void {
  const id = `${control.id || control.name}-error`;
  const field = control.closest('.field') ?? control.parentElement;
  let slot = field?.querySelector<HTMLElement>(`[data-error-for="${CSS.escape(control.name)}"]`) ?? null;
  if (text === null) {
    slot?.remove();
    control.removeAttribute('aria-invalid');
    control.setAttribute('aria-describedby', (control.getAttribute('aria-describedby') ?? '').split(' ').filter((part) => part && part !== id).join(' '));
    return;
  }
  if (!slot) {
    slot = h('p', { class: 'field-error', id, 'data-error-for': control.name });
    control.after(slot);
  }
  slot.textContent = text;
  control.setAttribute('aria-invalid', 'true');
  const described = new Set((control.getAttribute('aria-describedby') ?? '').split(' ').filter(Boolean));
  described.add(id);
  control.setAttribute('aria-describedby', [...described].join(' '));
}

/**
 * Form errors where the eye is: the browser's own checks and the Console's refusals go beside the field
 * they name, anything else at the top of the form; the values typed stay. Returns false when a field is
 * refused in the browser (nothing is sent then).
 */
export function formErrors(form: HTMLFormElement, general: HTMLElement) {
  form.noValidate = true;
  const controls = () => [...form.querySelectorAll<Control>('input[name], select[name], textarea[name]')];
  const clear = () => {
    for (const control of controls()) showFieldError(control, null);
    general.replaceChildren();
  };
  return {
    clear,
    /** The browser's checks (required, type, min/max, pattern), each beside its field; focus on the first. */
    checkInBrowser(): boolean {
      clear();
      const refused = controls().filter((control) => !control.checkValidity());
      for (const control of refused) showFieldError(control, control.validationMessage);
      refused[0]?.focus();
      return refused.length === 0;
    },
    /** A refusal from the Console: named fields beside themselves, the rest (or all of it) on top. */
    show(message: string): void {
      clear();
      const { fields, rest } = fieldErrorsOf(message);
      const unplaced: string[] = [];
      let firstPlaced: Control | undefined;
      for (const [path, texts] of fields) {
        const control = controls().find((candidate) => candidate.name === fieldNameOf(path));
        if (control) {
          showFieldError(control, texts.join('; '));
          firstPlaced ??= control;
        } else unplaced.push(`${path}: ${texts.join('; ')}`);
      }
      const top = [rest, ...unplaced].filter(Boolean).join(' ');
      if (top) general.replaceChildren(notice(top, 'error'));
      if (firstPlaced) firstPlaced.focus();
      else general.scrollIntoView({ block: 'nearest' });
    },
  };
}
