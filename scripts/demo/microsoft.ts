import { seedGraphDemo, startGraphDouble } from '@pcg/testkit/doubles';
import type { DemoApps } from './demo-apps.ts';
import { startDemoSignIn } from './demo-sign-in-start.ts';

const CLIENT = { clientId: 'demo-client', clientSecret: 'demo-secret' };

/**
 * The demo Microsoft account: the Graph double on a fixed port, seeded, and signed in through the Console
 * as a browser would (a demo start marked with the double's origin for both Microsoft origins, consent,
 * callback with the cookie), so the gateway needs no setting for it.
 */
export async function connectDemoMicrosoft(consoleBase: string, port: number, apps: DemoApps, say: (line: string) => void): Promise<{ connectionIds: string[]; close(): Promise<void> } | undefined> {
  const app = await apps.use('microsoft', CLIENT);
  if ('refused' in app) {
    say(`Microsoft demo skipped: ${app.refused}`);
    return undefined;
  }
  const graph = await startGraphDouble(CLIENT, { port });
  seedGraphDemo(graph);
  const start = await startDemoSignIn(consoleBase, 'microsoft', { MICROSOFT_LOGIN_BASE_URL: graph.url, MICROSOFT_GRAPH_BASE_URL: graph.url });
  const refused =
    'refused' in start
      ? start.refused
      : !start.location.startsWith(graph.url)
        ? `the Console did not send the sign-in to ${graph.url}`
        : new URL(start.location).searchParams.get('client_id') !== CLIENT.clientId
          ? apps.notOurs('microsoft')
          : undefined;
  if (refused !== undefined || 'refused' in start) {
    say(`Microsoft demo skipped: ${refused}`);
    await graph.close();
    return undefined;
  }
  const { location, cookie } = start;
  const consent = await fetch(location, { redirect: 'manual' });
  const answer = await fetch(consent.headers.get('location') ?? '', { headers: { cookie } });
  const body = (await answer.json()) as { connections?: Array<{ id: string; sector: string }>; renewed?: boolean; error?: string };
  if (!answer.ok) say(`Microsoft demo sign-in refused: ${body.error ?? answer.status}`);
  else say(`${body.renewed ? 'signed in again' : 'signed in'} the demo Microsoft account (no real account): ${(body.connections ?? []).map((row) => row.sector).join(', ')} connections`);
  return { connectionIds: answer.ok ? (body.connections ?? []).map((row) => row.id) : [], close: () => graph.close() };
}
