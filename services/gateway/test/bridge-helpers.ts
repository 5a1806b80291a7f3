import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryOAuthClientProvider } from '@modelcontextprotocol/sdk/examples/client/simpleOAuthClientProvider.js';
import type { AuditEvent } from '@pcg/shared/audit';
import { createSettingsEventPublisher, createSettingsService } from '@pcg/shared/settings';
import { createCapturingLogger, takeQueuedAuditRows, waitFor, type TestEnvironment } from '@pcg/testkit/testing';
import { BRIDGE_PATHS } from '../src/bridge/bridge-endpoints.ts';

/** Saves (or clears) the public origin as the Console does: stored, announced on the settings channel. */
export async function savePublicOrigin(testEnv: TestEnvironment, origin: string | null): Promise<void> {
  const settings = createSettingsService({
    db: testEnv.db,
    events: createSettingsEventPublisher(testEnv.redis, { REDIS_PREFIX: testEnv.redisPrefix }),
    audit: { record: (_event: AuditEvent) => undefined },
    log: createCapturingLogger().log,
  });
  await settings.savePublicOrigin(origin);
}

/** Waits until the running gateway serves (or stops serving) the bridge, without a restart. */
export async function waitForBridge(address: string, on: boolean): Promise<void> {
  await waitFor(
    async () => ((await fetch(`${address}${BRIDGE_PATHS.authorizationServer}`)).status === (on ? 200 : 404) ? true : undefined),
    5_000,
    `the bridge to switch ${on ? 'on' : 'off'}`,
  );
}

export const REDIRECT_URI = 'http://127.0.0.1:9/callback';

/** An SDK OAuth client provider that captures the sign-in address instead of opening a browser. */
export function oauthClient(clientName = 'Test client') {
  const captured: { authorizationUrl?: URL } = {};
  const provider = new InMemoryOAuthClientProvider(
    REDIRECT_URI,
    {
      client_name: clientName,
      redirect_uris: [REDIRECT_URI],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    },
    (url) => {
      captured.authorizationUrl = url;
    },
  );
  return { provider, captured };
}

/** The hidden and visible inputs of the sign-in form, read from the page as a browser would. */
export function formFields(html: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const match of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    fields[match[1] as string] = (match[2] as string).replaceAll('&quot;', '"').replaceAll('&#39;', "'").replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&amp;', '&');
  }
  return fields;
}

/** Posts the sign-in form with a key, as the operator's browser posts it; returns the answer unfollowed. */
export async function postSignIn(address: string, fields: Record<string, string>, key: string, decision = 'approve') {
  return fetch(`${address}${BRIDGE_PATHS.authorize}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ ...fields, agent_key: key, decision }),
    redirect: 'manual',
  });
}

/** Opens the sign-in page at the captured address, pastes the key and approves; returns the code. */
export async function signIn(authorizationUrl: URL, key: string): Promise<string> {
  const pageAnswer = await fetch(authorizationUrl);
  if (pageAnswer.status !== 200) throw new Error(`sign-in page answered ${pageAnswer.status}: ${await pageAnswer.text()}`);
  const answer = await postSignIn(authorizationUrl.origin, formFields(await pageAnswer.text()), key);
  const location = answer.headers.get('location');
  if (answer.status !== 302 || !location) throw new Error(`sign-in answered ${answer.status}: ${await answer.text()}`);
  const code = new URL(location).searchParams.get('code');
  if (!code) throw new Error(`no code in ${location}`);
  return code;
}

/** Waits until calls on the client's session are refused as an unknown session (it was ended by the gateway). */
export async function waitForSessionEnd(client: Client, timeoutMs: number): Promise<void> {
  await waitFor(async () => {
    try {
      await client.callTool({ name: 'describe_context', arguments: {} });
      return undefined;
    } catch (error) {
      return /404|Unknown session/.test(String(error)) ? true : undefined;
    }
  }, timeoutMs, 'the session to end');
}

/**
 * The audit rows the gateway queued, popped from Redis once and kept, since the tests of a file share the
 * queue: `rows()` answers every row seen so far, in order.
 */
export function auditCollector(testEnv: TestEnvironment) {
  const seen: Array<Record<string, unknown>> = [];
  return async () => {
    seen.push(...(await takeQueuedAuditRows(testEnv.redis)));
    return seen;
  };
}
