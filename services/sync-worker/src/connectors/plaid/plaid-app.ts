import type { CommonQueryMethods } from 'slonik';
import { PLAID } from '@pcg/shared/providers';
import { linkAppLoader } from '../../sign-ins/link-aggregators.ts';
import type { PlaidApp } from './plaid-api.ts';

/** Reads the aggregator application the operator saved in the Console; null until it is saved with its environment. */
export function plaidAppLoader(db: CommonQueryMethods, credentialsKey: Buffer): () => Promise<PlaidApp | null> {
  const load = linkAppLoader(db, credentialsKey);
  return () => load(PLAID.kind);
}
