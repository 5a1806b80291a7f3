import type { DemoEndpoints } from '@pcg/shared/providers';
import type { DemoApps } from './demo-apps.ts';
import { startDemoSignIn } from './demo-sign-in-start.ts';

/**
 * Signs a demo account in through the Console as a browser would: saves the double's app credentials (never
 * over an operator's own, `demo-apps.ts`), starts a demo sign-in marked with the double's loopback origin (`endpoints`), follows the double's
 * consent and calls back with the Console's cookie. Refuses (and says why) when the Console would send the
 * person anywhere but the double. Answers the ids of the connections the sign-in holds (none when refused).
 */
export async function signInDemoAccount(
  consoleBase: string,
  options: { provider: string; name: string; client: { clientId: string; clientSecret: string }; doubleUrl: string; endpoints: DemoEndpoints },
  apps: DemoApps,
  say: (line: string) => void,
): Promise<string[]> {
  const app = await apps.use(options.provider, options.client);
  if ('refused' in app) {
    say(`${options.name} demo skipped: ${app.refused}`);
    return [];
  }
  const start = await startDemoSignIn(consoleBase, options.provider, options.endpoints);
  if ('refused' in start || !start.location.startsWith(options.doubleUrl)) {
    say(`${options.name} demo skipped: ${'refused' in start ? start.refused : `the Console did not send the sign-in to ${options.doubleUrl}`}`);
    return [];
  }
  if (new URL(start.location).searchParams.get('client_id') !== options.client.clientId) {
    say(`${options.name} demo skipped: ${apps.notOurs(options.provider)}`);
    return [];
  }
  const { location, cookie } = start;
  const consent = await fetch(location, { redirect: 'manual' });
  const answer = await fetch(consent.headers.get('location') ?? '', { headers: { cookie } });
  const body = (await answer.json()) as { connections?: Array<{ id: string; sector: string }>; renewed?: boolean; error?: string };
  if (!answer.ok) {
    say(`${options.name} demo sign-in refused: ${body.error ?? answer.status}`);
    return [];
  }
  const connections = body.connections ?? [];
  say(`${body.renewed ? 'signed in again' : 'signed in'} the demo ${options.name} account (no real account): ${connections.map((row) => row.sector).join(', ')}`);
  return connections.map((row) => row.id);
}
