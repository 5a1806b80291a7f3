/** One field of a connect form, as far as what it sends is concerned. */
export type CredentialValue = { name: string; required: boolean; value(): string };

/**
 * The credentials a connect form sends: an optional field left empty is left out rather than sent as "",
 * which its schema would refuse (iCloud's optional iCloud Mail address).
 */
export function credentialsOf(fields: readonly CredentialValue[]): Record<string, string> {
  return Object.fromEntries(
    fields.flatMap((field) => {
      const value = field.value();
      return field.required || value !== '' ? [[field.name, value] as const] : [];
    }),
  );
}
