import { DomainError } from '@pcg/shared/errors';
import type { DemoEndpoints, ProviderDescriptor } from '@pcg/shared/providers';
import type { CheckRequester } from '@pcg/shared/queues';

/** The source refused the credential typed at connect (issue 32): nothing was saved. */
export class CredentialRefusedError extends DomainError {
  constructor(message: string) {
    super('unprocessable', 'credential_refused', message);
  }
}

/**
 * The check's credential step before a token connection is saved (issue 32 "Checked at connect"): the
 * sync-worker asks the source once with the sealed credentials. A refusal throws (422, nothing saved);
 * a source that cannot be asked, or a sync-worker that does not answer, gives a warning and the
 * connection is saved. Without a check requester nothing is asked.
 */
export async function checkBeforeSaving(
  checks: Pick<CheckRequester, 'checkCredentials'> | undefined,
  provider: ProviderDescriptor,
  sealed: Buffer,
  signInId: string,
  demoEndpoints?: DemoEndpoints | null,
): Promise<string | undefined> {
  if (!checks) return undefined;
  let result;
  try {
    result = await checks.checkCredentials({ provider: provider.kind, signInId, sealedCredentials: sealed.toString('base64'), ...(demoEndpoints ? { demoEndpoints } : {}) });
  } catch (error) {
    return `saved, but not checked against the source (${(error as Error).message})`;
  }
  if (result.outcome === 'refused') throw new CredentialRefusedError(`${provider.displayName}: ${result.message}; nothing was saved`);
  return result.outcome === 'unreachable' ? result.message : undefined;
}
