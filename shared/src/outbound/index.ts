export * from './address-refused-error.ts';
export * from './refused-addresses.ts';
export * from './address-policy.ts';
export * from './outbound-fetch.ts';
export * from './outbound.ts';
export * from './saved-address.ts';
