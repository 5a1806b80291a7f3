import { createAddressPolicy, type AddressPolicyOptions } from './address-policy.ts';
import { createOutboundFetch, type OutboundFetchOptions } from './outbound-fetch.ts';

/** The address policy and the fetch that dials through it, made together: what the sync-worker hands its source clients. */
export function createOutbound(options: AddressPolicyOptions & OutboundFetchOptions) {
  const policy = createAddressPolicy(options);
  const transport = createOutboundFetch(policy, options);
  return { ...policy, fetch: transport.fetch, close: transport.close };
}

export type Outbound = ReturnType<typeof createOutbound>;
