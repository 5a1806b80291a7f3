import { h, labelled } from './dom.ts';
import type { CredentialValue } from './credential-values.ts';
import type { JsonSchema } from './types.ts';

export type CredentialField = CredentialValue & { element: HTMLElement; input: HTMLInputElement };

/** The audit record's redaction rule (spec 8): a field so named is typed as a password. */
const SECRET_NAME = /pass|secret|token|key|authorization|cookie/i;

/** `baseUrl` → "Base URL": a field's label when its schema has no title. */
export function labelOf(name: string, schema: JsonSchema): string {
  if (schema.title) return schema.title;
  const words = name.replace(/([a-z0-9])([A-Z])/g, '$1 $2').replace(/[_-]+/g, ' ').toLowerCase();
  return (words.charAt(0).toUpperCase() + words.slice(1)).replace(/\burl\b/gi, 'URL').replace(/\bid\b/gi, 'ID');
}

/** One input per property of a provider's credentials schema (its JSON Schema, from the descriptor). */
export function credentialFields(schema: JsonSchema | null): CredentialField[] {
  if (!schema?.properties) return [];
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties).map(([name, property]) => {
    const type = SECRET_NAME.test(name) ? 'password' : property.format === 'uri' ? 'url' : 'text';
    const input = h('input', { type, name, required: required.has(name), autocomplete: type === 'password' ? 'new-password' : 'off', spellcheck: false });
    if (property.maxLength !== undefined) input.maxLength = property.maxLength;
    const hint = property.description ?? (type === 'url' ? 'An http:// or https:// address' : type === 'password' ? 'Stored encrypted; never shown again' : undefined);
    return { name, required: required.has(name), element: labelled(labelOf(name, property), input, hint), input, value: () => input.value.trim() };
  });
}

