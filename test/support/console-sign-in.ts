import type { ConnectionRow } from '@pcg/shared/connections';
import { createConnectionQueries } from '@pcg/shared/connections';
import type { DatabasePool } from '@pcg/shared/db';
import { waitFor } from '@pcg/testkit/testing';

/**
 * An OAuth sign-in through the Console as a browser makes it: `start` (its state cookie kept), the
 * provider's consent page (a double that consents at once), then the callback with the same cookie.
 * Answers each step's outcome for the test to assert.
 */
export async function signInThroughConsole(consoleBase: string, provider: string, query = '') {
  const start = await fetch(`${consoleBase}/api/connect/${provider}/start${query}`, { redirect: 'manual' });
  const cookie = (start.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const authorize = new URL(start.headers.get('location') ?? '');
  const consent = await fetch(authorize, { redirect: 'manual' });
  const answer = await fetch(consent.headers.get('location') ?? '', { headers: { cookie } });
  return { startStatus: start.status, status: answer.status, body: (await answer.json()) as Record<string, unknown>, authorize };
}

/** Asks the Console for a sync of one connection (202, or it throws) and waits until a newer sync is recorded. */
export async function syncThroughConsole(db: DatabasePool, consoleBase: string, id: string): Promise<void> {
  const connection = (): Promise<ConnectionRow | null> => createConnectionQueries(db).get(id);
  const before = (await connection())?.last_synced_at;
  const asked = (await fetch(`${consoleBase}/api/connections/${id}/sync`, { method: 'POST' })).status;
  if (asked !== 202) throw new Error(`POST /api/connections/${id}/sync answered ${asked}, not 202`);
  await waitFor(async () => ((await connection())?.last_synced_at !== before ? true : undefined), 15_000, 'the sync');
}
