import type { AddressPolicy } from './address-policy.ts';
import { shownAddress } from './address-refused-error.ts';

/** What the operator gives instead of a refused address, in every refusal at save. */
export const SAVED_ADDRESS_FIX =
  "give the source's own address instead: its name, or its loopback, private or public address, over http or https, on a port that is not this gateway's own";

/**
 * The message of a 400 at save for an address the outbound policy refuses as written (issue 32): which
 * field, the address (scheme, host and port only), why, and what to give instead; undefined when it
 * passes or does not parse (the credentials' schema answers for that).
 */
export function savedAddressRefusal(policy: Pick<AddressPolicy, 'urlRefusal'>, field: string, address: string): string | undefined {
  if (!URL.canParse(address)) return undefined;
  const url = new URL(address);
  const reason = policy.urlRefusal(url);
  return reason === undefined ? undefined : `${field} ${shownAddress(url)} was refused: ${reason}; ${SAVED_ADDRESS_FIX}`;
}

/** `savedAddressRefusal` for each address field a provider's credentials have (`addressFields`), the first refusal. */
export function credentialsAddressRefusal(policy: Pick<AddressPolicy, 'urlRefusal'>, provider: { addressFields?: readonly string[] | undefined }, credentials: unknown): string | undefined {
  for (const field of provider.addressFields ?? []) {
    const value = (credentials as Record<string, unknown> | null)?.[field];
    const refusal = typeof value === 'string' ? savedAddressRefusal(policy, `'credentials.${field}'`, value) : undefined;
    if (refusal) return refusal;
  }
  return undefined;
}
