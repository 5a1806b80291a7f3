import { startPlaidDouble } from '@pcg/testkit/doubles';

const APP = { clientId: 'demo-aggregator-client', secret: 'demo-aggregator-secret' };

/**
 * The demo bank at the aggregator: the aggregator double on a fixed port, and a bank linked through the
 * Console as a browser would (start, the hosted page, the completion redirect back with the cookie). The
 * sync-worker reads the aggregator's address at start, so the gateway must run with PLAID_BASE_URL
 * pointing here (e.g. in .env); otherwise this says so and sends nothing, not even to the real aggregator.
 */
export async function connectDemoAggregator(consoleBase: string, port: number, say: (line: string) => void): Promise<{ connectionIds: string[]; close(): Promise<void> } | undefined> {
  const aggregator = await startPlaidDouble({ ...APP, port });
  if (process.env.PLAID_BASE_URL !== aggregator.url) {
    say(`bank aggregator demo skipped: start the gateway with PLAID_BASE_URL=${aggregator.url}`);
    await aggregator.close();
    return undefined;
  }
  const json = { 'content-type': 'application/json' };
  const saved = await fetch(`${consoleBase}/api/connect/plaid/app`, { method: 'PUT', headers: json, body: JSON.stringify({ clientId: APP.clientId, clientSecret: APP.secret, environment: 'sandbox' }) });
  const start = await fetch(`${consoleBase}/api/connect/plaid/start`, { redirect: 'manual' });
  const hosted = start.headers.get('location') ?? '';
  if (saved.status !== 204 || !hosted.startsWith(aggregator.url)) {
    say(`bank aggregator demo: the hosted link did not open (HTTP ${start.status})`);
    await aggregator.close();
    return undefined;
  }
  const cookie = (start.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  // The hosted page links the demo bank on open and sends the browser back to the Console.
  const linked = await fetch(hosted, { redirect: 'manual' });
  const answer = await fetch(linked.headers.get('location') ?? '', { headers: { cookie } });
  const body = (await answer.json()) as { connections?: Array<{ id: string; displayName: string }>; error?: string };
  if (!answer.ok) say(`bank aggregator demo link refused: ${body.error ?? answer.status}`);
  else say(`linked a demo bank through the aggregator's hosted link (no real bank): ${(body.connections ?? []).map((row) => row.displayName).join(', ')}`);
  return { connectionIds: answer.ok ? (body.connections ?? []).map((row) => row.id) : [], close: () => aggregator.close() };
}
