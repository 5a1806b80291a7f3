import { UnrecoverableError, type Job } from 'bullmq';
import { openCredentials } from '@pcg/shared/crypto';
import type { Logger } from '@pcg/shared/logger';
import { findProvider, isLinkProvider, realOrigins, rebaserFor, type LinkItemCredentials, type RebaseUrl } from '@pcg/shared/providers';
import type { ItemRemoveJob, ItemRemoveResult } from '@pcg/shared/queues';
import { SourceError, SourceRejectedError } from '../connectors/kit/source-errors.ts';
import { linkApiOf, type LinkApp } from './link-aggregators.ts';

export type ItemRemoveDeps = {
  credentialsKey: Buffer;
  log: Logger;
  requestTimeoutMs: number;
  rebaseUrl?: RebaseUrl;
  /** The aggregator application the operator saved for a provider kind; null when not saved. */
  loadApp: (kind: string) => Promise<LinkApp | null>;
};

const skipped = (detail: string): ItemRemoveResult => ({ outcome: 'skipped', detail });

/**
 * `item_remove`: the last connection of a `link` sign-in was deleted in the Console, so its item is
 * removed at the aggregator (`/item/remove`), which stops the item's billing and revokes its access
 * token there. Best effort: the deletion is done already. An aggregator that fails to answer is asked
 * again with the queue's backoff; after the last attempt the failure is logged for the operator (the
 * item id, never the token). An item the aggregator no longer knows counts as removed.
 */
export function createItemRemoveRunner(deps: ItemRemoveDeps) {
  return async function itemRemove(job: Job, data: ItemRemoveJob): Promise<ItemRemoveResult> {
    const log = deps.log.child({ jobId: job.id, provider: data.provider, signInId: data.signInId });
    const provider = findProvider(data.provider);
    if (!isLinkProvider(provider)) return skipped(`'${data.provider}' holds no item at an aggregator`);
    let credentials: LinkItemCredentials;
    try {
      credentials = provider.link.itemCredentials.parse(openCredentials(deps.credentialsKey, Buffer.from(data.sealedCredentials, 'base64'), data.signInId));
    } catch {
      log.error('the deleted sign-in\'s credentials do not open with this CREDENTIALS_KEY; remove the item from the aggregator\'s dashboard');
      return skipped('credentials unreadable');
    }
    const itemLog = log.child({ itemId: credentials.itemId });
    const app = await deps.loadApp(provider.kind);
    if (!app) {
      itemLog.error(`${provider.displayName}'s application is not saved, so the item was not removed; remove it from the aggregator's dashboard`);
      return skipped('application not saved');
    }
    const api = linkApiOf(provider, { app, rebaseUrl: rebaserFor(data.demoEndpoints, deps.rebaseUrl ?? realOrigins), timeoutMs: deps.requestTimeoutMs });
    const attempts = job.opts.attempts ?? 1;
    try {
      const outcome = await api.removeItem(credentials.accessToken);
      itemLog.info({ outcome, attempt: job.attemptsMade + 1 }, outcome === 'removed' ? 'item removed at the aggregator' : 'item already gone at the aggregator');
      return { outcome };
    } catch (error) {
      const message = error instanceof SourceError ? error.message : 'the removal failed inside the gateway';
      const last = error instanceof SourceRejectedError || job.attemptsMade + 1 >= attempts;
      if (!last) {
        itemLog.warn({ attempt: job.attemptsMade + 1, attempts, reason: message }, 'item removal at the aggregator failed; it will be tried again');
        throw error instanceof SourceError ? error : new Error(message);
      }
      itemLog.error(
        { attempt: job.attemptsMade + 1, attempts, reason: message },
        "the item could not be removed at the aggregator and is still active there; remove it from the aggregator's dashboard",
      );
      throw new UnrecoverableError(message);
    }
  };
}
