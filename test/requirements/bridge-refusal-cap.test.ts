import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestAgent, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { BRIDGE_PATHS } from '../../services/gateway/src/bridge/bridge-endpoints.ts';
import type { RunningGateway } from '../../services/gateway/src/service.ts';
import { auditCollector, formFields, postSignIn, REDIRECT_URI, savePublicOrigin, waitForBridge } from '../../services/gateway/test/bridge-helpers.ts';
import { startTestGateway } from '../../services/gateway/test/gateway-harness.ts';

// Spec 6 and 8: the bridge's cheap refusals are capped at 30 a minute with a summary row in the next window;
// a sign-in refused for its key is recorded at any rate and never uses up that cap. The gateway's clock is
// moved instead of waiting a minute: it decides the refusal windows.
const testEnv = useTestEnvironment();
let gateway: RunningGateway;
let clockOffsetMs = 0;
const auditRows = auditCollector(testEnv);
/** Spec 6 and 8: counted refusal lines, 30 a minute per kind. */
const REFUSALS_RECORDED_A_MINUTE = 30;
const MINUTE_MS = 60_000;
const EXTRA = 5;

beforeAll(async () => {
  gateway = await startTestGateway(testEnv, {}, { now: () => new Date(Date.now() + clockOffsetMs) });
  await savePublicOrigin(testEnv, gateway.address);
  await waitForBridge(gateway.address, true);
});
afterAll(async () => gateway.close());

const url = (path: string) => `${gateway.address}${path}`;
const authorizeQuery = (clientId: string) =>
  new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    code_challenge: createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url'),
    code_challenge_method: 'S256',
    state: 'st',
    resource: `${gateway.address}/mcp`,
  });

/** The sign-in form of a freshly registered client. */
async function signInForm(): Promise<Record<string, string>> {
  const registered = await fetch(url(BRIDGE_PATHS.register), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Cap tester', redirect_uris: [REDIRECT_URI] }),
  });
  const clientId = ((await registered.json()) as { client_id: string }).client_id;
  const page = await fetch(`${url(BRIDGE_PATHS.authorize)}?${authorizeQuery(clientId)}`);
  expect(page.status).toBe(200);
  return formFields(await page.text());
}

/** The rows queued so far that match, polled until there are `count` of them. */
const rowsUntil = (count: number, keep: (row: Record<string, unknown>) => boolean) =>
  waitFor(async () => {
    const rows = (await auditRows()).filter(keep);
    return rows.length >= count ? rows : undefined;
  }, 10_000, `${count} matching audit rows`);

describe('the bridge refusal cap at the gateway (spec 6, 8)', () => {
  it('records every never-expiring key refused, caps the unknown-client refusals at 30, and writes the summary when the next window sees one', async () => {
    // One second into a fresh window of the gateway's clock, so every request below falls in it.
    const window = Math.floor(Date.now() / MINUTE_MS) + 1_000;
    clockOffsetMs = window * MINUTE_MS + 1_000 - Date.now();
    const key = await createTestAgent(testEnv.db, { name: 'never-expires', sectors: ['home'] });
    const fields = await signInForm();
    for (let n = 0; n < REFUSALS_RECORDED_A_MINUTE + EXTRA; n += 1) expect((await postSignIn(gateway.address, fields, key)).status).toBe(403);
    const unknownClient = `${url(BRIDGE_PATHS.authorize)}?${authorizeQuery('pcgc_nobody')}`;
    for (let n = 0; n < REFUSALS_RECORDED_A_MINUTE + EXTRA; n += 1) expect((await fetch(unknownClient)).status).toBe(400);

    const noExpiry = await rowsUntil(REFUSALS_RECORDED_A_MINUTE + EXTRA, (row) => row.denyReason === 'authorize: key has no expiry');
    expect(noExpiry).toHaveLength(REFUSALS_RECORDED_A_MINUTE + EXTRA);
    expect(noExpiry.every((row) => row.agentId === 'never-expires' && row.decision === 'deny')).toBe(true);
    const cheap = await rowsUntil(REFUSALS_RECORDED_A_MINUTE, (row) => row.denyReason === 'authorize: unknown client');
    expect(cheap).toHaveLength(REFUSALS_RECORDED_A_MINUTE);
    expect((await auditRows()).filter((row) => String(row.denyReason).startsWith('throttled:'))).toEqual([]);

    // The next window: its first cheap refusal brings the summary of the five counted ones, then its own row.
    clockOffsetMs += MINUTE_MS;
    expect((await fetch(unknownClient)).status).toBe(400);
    // Spec 6: `throttled: <n> further bridge denials suppressed`, n being the EXTRA refusals counted past the cap.
    const summary = 'throttled: 5 further bridge denials suppressed';
    const after = await rowsUntil(2, (row) => row.denyReason === summary || (row.denyReason === 'authorize: unknown client' && !cheap.includes(row)));
    expect(after).toMatchObject([
      { agentId: null, decision: 'deny', denyReason: summary },
      { agentId: null, decision: 'deny', denyReason: 'authorize: unknown client' },
    ]);
  }, 60_000);
});
