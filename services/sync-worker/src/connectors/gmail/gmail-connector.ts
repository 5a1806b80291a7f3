import { GMAIL, GMAIL_API_BASE } from '@pcg/shared/providers';
import type { Connector } from '../connector-types.ts';
import { syncGmail } from './gmail-sync.ts';

/** Gmail message envelopes (reference §5), read with the `gmail.metadata` scope only. */
export function createGmailConnector(options: { apiBase?: string } = {}): Connector {
  const apiBase = options.apiBase ?? GMAIL_API_BASE;
  return {
    provider: GMAIL,
    actions: [],
    sync: (context) => syncGmail(context, apiBase),
  };
}
