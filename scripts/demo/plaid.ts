import { startPlaidDouble } from '@pcg/testkit/doubles';
import type { DemoApps } from './demo-apps.ts';
import { startDemoSignIn } from './demo-sign-in-start.ts';

const APP = { clientId: 'demo-aggregator-client', secret: 'demo-aggregator-secret' };

/**
 * The demo bank at the aggregator: the aggregator double on a fixed port, and a bank linked through the
 * Console as a browser would (a demo start marked with the double's origin, the hosted page, the completion
 * redirect back with the cookie), so the gateway needs no setting for it; nothing goes to the real aggregator.
 */
export async function connectDemoAggregator(consoleBase: string, port: number, apps: DemoApps, say: (line: string) => void): Promise<{ connectionIds: string[]; close(): Promise<void> } | undefined> {
  const app = await apps.use('plaid', { clientId: APP.clientId, clientSecret: APP.secret, environment: 'sandbox' });
  if ('refused' in app) {
    say(`bank aggregator demo skipped: ${app.refused}`);
    return undefined;
  }
  const aggregator = await startPlaidDouble({ ...APP, port });
  // An operator's application saved since the demo's own makes the stand-in refuse the link (another client id).
  const start = await startDemoSignIn(consoleBase, 'plaid', { PLAID_BASE_URL: aggregator.url });
  if ('refused' in start || !start.location.startsWith(aggregator.url)) {
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
