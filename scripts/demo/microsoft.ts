import { seedGraphDemo, startGraphDouble } from '@pcg/testkit/doubles';
import { startDemoSignIn } from './demo-sign-in-start.ts';

const CLIENT = { clientId: 'demo-client', clientSecret: 'demo-secret' };

/**
 * The demo Microsoft account: the Graph double on a fixed port, seeded, and signed in through the Console
 * as a browser would (a demo start marked with the double's origin for both Microsoft origins, consent,
 * callback with the cookie), so the gateway needs no setting for it.
 */
export async function connectDemoMicrosoft(consoleBase: string, port: number, say: (line: string) => void): Promise<{ connectionIds: string[]; close(): Promise<void> } | undefined> {
  const graph = await startGraphDouble(CLIENT, { port });
  seedGraphDemo(graph);
  const saved = await fetch(`${consoleBase}/api/connect/microsoft/app`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(CLIENT) });
  const start = await startDemoSignIn(consoleBase, 'microsoft', { MICROSOFT_LOGIN_BASE_URL: graph.url, MICROSOFT_GRAPH_BASE_URL: graph.url });
  if (saved.status !== 204 || 'refused' in start || !start.location.startsWith(graph.url)) {
    say(`Microsoft demo skipped: ${'refused' in start ? start.refused : `the Console did not send the sign-in to ${graph.url}`}`);
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
