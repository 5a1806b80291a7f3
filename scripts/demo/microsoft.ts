import { seedGraphDemo, startGraphDouble } from '@pcg/testkit/doubles';
import type { DemoApps } from './demo-apps.ts';
import { signInDemoAccount } from './oauth-sign-in.ts';

const CLIENT = { clientId: 'demo-client', clientSecret: 'demo-secret' };

/**
 * The demo Microsoft account: the Graph double on a fixed port, seeded, and signed in through the Console
 * as a browser would (a demo start marked with the double's origin for both Microsoft origins, consent,
 * callback with the cookie), so the gateway needs no setting for it.
 */
export async function connectDemoMicrosoft(consoleBase: string, port: number, apps: DemoApps, say: (line: string) => void): Promise<{ connectionIds: string[]; close(): Promise<void> } | undefined> {
  const graph = await startGraphDouble(CLIENT, { port });
  seedGraphDemo(graph);
  const endpoints = { MICROSOFT_LOGIN_BASE_URL: graph.url, MICROSOFT_GRAPH_BASE_URL: graph.url };
  const connectionIds = await signInDemoAccount(consoleBase, { provider: 'microsoft', name: 'Microsoft', client: CLIENT, doubleUrl: graph.url, endpoints }, apps, say);
  if (connectionIds.length === 0) {
    await graph.close();
    return undefined;
  }
  return { connectionIds, close: () => graph.close() };
}
