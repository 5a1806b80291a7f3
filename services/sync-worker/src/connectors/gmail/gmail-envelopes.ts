import PQueue from 'p-queue';
import { z } from 'zod';
import type { ConnectorContext } from '../connector-types.ts';
import { SourceRejectedError } from '../kit/source-errors.ts';
import { parseEach } from '../google/google-api.ts';
import type { GmailGet } from './gmail-client.ts';
import { GmailMessageSchema, HIDDEN_LABELS, messageRecord, METADATA_HEADERS, type LabelNames } from './gmail-mapping.ts';

export const OBJECT = 'mail.message';
/**
 * `messages.get` calls in flight at once, and started per second. Gmail allows a user 15,000 quota
 * units a minute and a `messages.get` costs 5 (reference §5.5): 40 a second is 12,000 units a minute,
 * leaving a fifth of the quota to the listing, the history and any other client of the same mailbox.
 * Ten in flight reach that rate at a quarter second a call without opening more connections than
 * Google's per-user concurrency tolerates.
 */
export const GMAIL_GET_CONCURRENCY = 10;
export const GMAIL_GETS_PER_SECOND = 40;
/** Records written per upsert while a full sync walks a large mailbox. */
const BATCH = 200;

const LabelsSchema = z.looseObject({ labels: z.array(z.looseObject({ id: z.string(), name: z.string(), type: z.string().optional() })).default([]) });

const metadataQuery = () => new URLSearchParams([['format', 'metadata'], ...METADATA_HEADERS.map((name) => ['metadataHeaders', name] as [string, string])]);

export async function labelNames(get: GmailGet): Promise<LabelNames> {
  const { labels } = await get('/labels', new URLSearchParams(), LabelsSchema);
  return new Map(labels.filter((label) => label.type !== 'system').map((label) => [label.id, label.name]));
}

/**
 * Fetches the envelopes of `ids` at the bound above and hands them on in batches; a message gone since
 * it was listed (404) is reported in `missing`. Each id whose envelope was handed on, or that is gone,
 * is added to `settled`. The first failure stops what has not started; what was fetched before it is
 * still handed on (so a retried sync need not ask for it again), then the failure is thrown.
 */
export async function fetchEnvelopes(
  context: ConnectorContext,
  get: GmailGet,
  ids: readonly string[],
  onBatch: (records: unknown[]) => Promise<void>,
  settled: Set<string> = new Set(),
): Promise<Set<string>> {
  const queue = new PQueue({ concurrency: GMAIL_GET_CONCURRENCY, intervalCap: GMAIL_GETS_PER_SECOND, interval: 1_000 });
  const missing = new Set<string>();
  let pending: Array<{ id: string; raw: unknown }> = [];
  const flush = async () => {
    const batch = pending;
    pending = [];
    if (batch.length === 0) return;
    await onBatch(batch.map((entry) => entry.raw));
    for (const entry of batch) settled.add(entry.id);
  };
  const fetchOne = async (id: string) => {
    try {
      pending.push({ id, raw: await get(`/messages/${encodeURIComponent(id)}`, metadataQuery(), z.unknown()) });
      // The call that fills a batch writes it, so a failed write fails the sync like a failed read.
      if (pending.length >= BATCH) await flush();
    } catch (error) {
      if (!(error instanceof SourceRejectedError && error.status === 404)) throw error;
      missing.add(id);
      settled.add(id);
    }
  };
  try {
    await Promise.all(ids.map((id) => queue.add(() => fetchOne(id), { signal: context.signal })));
  } catch (error) {
    queue.clear();
    await queue.onIdle();
    await flush().catch((cause: unknown) => context.log.warn({ err: cause }, 'envelopes fetched before a failure could not be written'));
    throw error;
  }
  await flush();
  return missing;
}

/** Writes the envelopes outside SPAM and TRASH; `listed` and `hidden` hear which were which. */
export function writer(context: ConnectorContext, account: string, names: LabelNames, listed: Set<string>, hidden: Set<string>) {
  return async (raw: unknown[]) => {
    const messages = parseEach(context, 'Gmail message', GmailMessageSchema, raw);
    const kept = messages.filter((message) => !message.labelIds.some((label) => HIDDEN_LABELS.has(label)));
    for (const message of messages) (kept.includes(message) ? listed : hidden).add(message.id);
    if (kept.length > 0) await context.cache.upsert(OBJECT, kept.map((message) => messageRecord(message, account, names)));
  };
}
