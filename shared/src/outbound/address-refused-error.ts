/**
 * An address the outbound policy refused: nothing was sent to it. `address` is what the operator gave, as
 * scheme, host and port only (never a path or a user name); `reason` says what is wrong with it.
 */
export class AddressRefusedError extends Error {
  readonly address: string;
  readonly reason: string;
  constructor(address: string, reason: string) {
    super(`the address ${address} was refused: ${reason}`);
    this.name = 'AddressRefusedError';
    this.address = address;
    this.reason = reason;
  }
}

/** A URL as a refusal may show it: scheme, host and port. */
export function shownAddress(url: URL): string {
  return url.protocol === 'http:' || url.protocol === 'https:' ? `${url.protocol}//${url.host}` : url.protocol;
}
