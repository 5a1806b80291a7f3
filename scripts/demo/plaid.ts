import { startPlaidDouble } from '@pcg/testkit/doubles';
import { startDemoSignIn } from './demo-sign-in-start.ts';

const APP = { clientId: 'demo-aggregator-client', secret: 'demo-aggregator-secret' };

/**
 * The demo bank at the aggregator: the aggregator double on a fixed port, and a bank linked through the
 * Console as a browser would (a demo start marked with the double's origin, the hosted page, the completion
 * redirect back with the cookie), so the gateway needs no setting for it; nothing goes to the real aggregator.
 */
export async function connectDemoAggregator(consoleBase: string, port: number, say: (line: string) => void): Promise<{ connectionIds: string[]; close(): Promise<void> } | undefined> {
  const aggregator = await startPlaidDouble({ ...APP, port });
  const json = { 'content-type': 'application/json' };
  const saved = await fetch(`${consoleBase}/api/connect/plaid/app`, { method: 'PUT', headers: json, body: JSON.stringify({ clientId: APP.clientId, clientSecret: APP.secret, environment: 'sandbox' }) });
  const start = await startDemoSignIn(consoleBase, 'plaid', { PLAID_BASE_URL: aggregator.url });
  if (saved.status !== 204 || 'refused' in start || !start.location.startsWith(aggregator.url)) {
    say(`bank aggregator demo: the hosted link did not open (${'refused' in start ? start.refused : 'not at the demo aggregator'})`);
    await aggregator.close();
    return undefined;
  }
  const { location: hosted, cookie } = start;
  // The hosted page links the demo bank on open and sends the browser back to the Console.
  const linked = await fetch(hosted, { redirect: 'manual' });
  const answer = await fetch(linked.headers.get('location') ?? '', { headers: { cookie } });
  const body = (await answer.json()) as { connections?: Array<{ id: string; displayName: string }>; error?: string };
  if (!answer.ok) say(`bank aggregator demo link refused: ${body.error ?? answer.status}`);
  else say(`linked a demo bank through the aggregator's hosted link (no real bank): ${(body.connections ?? []).map((row) => row.displayName).join(', ')}`);
  return { connectionIds: answer.ok ? (body.connections ?? []).map((row) => row.id) : [], close: () => aggregator.close() };
}
