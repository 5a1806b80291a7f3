import { seedGraphDemo, startGraphDouble } from '@pcg/testkit/doubles';

const CLIENT = { clientId: 'demo-client', clientSecret: 'demo-secret' };

/**
 * The demo Microsoft account: the Graph double on a fixed port, seeded, and signed in through the Console
 * as a browser would (start, consent, callback with the cookie). The gateway reads the provider's
 * addresses at start, so it must run with MICROSOFT_LOGIN_BASE_URL and MICROSOFT_GRAPH_BASE_URL set to
 * this double's origin (e.g. in .env); otherwise this says so and signs nothing in.
 */
export async function connectDemoMicrosoft(consoleBase: string, port: number, say: (line: string) => void): Promise<{ connectionIds: string[]; close(): Promise<void> } | undefined> {
  const graph = await startGraphDouble(CLIENT, { port });
  seedGraphDemo(graph);
  const saved = await fetch(`${consoleBase}/api/connect/microsoft/app`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(CLIENT) });
  const start = await fetch(`${consoleBase}/api/connect/microsoft/start`, { redirect: 'manual' });
  const location = start.headers.get('location') ?? '';
  if (saved.status !== 204 || !location.startsWith(graph.url)) {
    say(`Microsoft demo skipped: start the gateway with MICROSOFT_LOGIN_BASE_URL=${graph.url} and MICROSOFT_GRAPH_BASE_URL=${graph.url}`);
    await graph.close();
    return undefined;
  }
  const cookie = (start.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const consent = await fetch(location, { redirect: 'manual' });
  const answer = await fetch(consent.headers.get('location') ?? '', { headers: { cookie } });
  const body = (await answer.json()) as { connections?: Array<{ id: string; sector: string }>; renewed?: boolean; error?: string };
  if (!answer.ok) say(`Microsoft demo sign-in refused: ${body.error ?? answer.status}`);
  else say(`${body.renewed ? 'signed in again' : 'signed in'} the demo Microsoft account (no real account): ${(body.connections ?? []).map((row) => row.sector).join(', ')} connections`);
  return { connectionIds: answer.ok ? (body.connections ?? []).map((row) => row.id) : [], close: () => graph.close() };
}
