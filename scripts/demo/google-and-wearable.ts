import { startGoogleDouble, startWhoopDouble } from '@pcg/testkit/doubles';
import type { DemoApps } from './demo-apps.ts';
import { signInDemoAccount } from './oauth-sign-in.ts';

/**
 * The demo Google account (Calendar and Contacts through one sign-in, Gmail through its own) and the
 * demo wearable: each double on a fixed port, signed in through the Console as demo sign-ins marked with
 * the double's origin, so the gateway needs no setting for them.
 */
export async function connectDemoGoogleAndWearable(consoleBase: string, ports: { google: number; wearable: number }, apps: DemoApps, say: (line: string) => void): Promise<{ connectionIds: string[]; close(): Promise<void> }> {
  const google = await startGoogleDouble({ port: ports.google });
  const wearable = await startWhoopDouble({ port: ports.wearable, days: 14 });
  const googleSetting = { client: google.client, doubleUrl: google.url, endpoints: { GOOGLE_BASE_URL: google.url } };
  const connectionIds = [
    ...(await signInDemoAccount(consoleBase, { provider: 'google', name: 'Google (calendar and contacts)', ...googleSetting }, apps, say)),
    ...(await signInDemoAccount(consoleBase, { provider: 'gmail', name: 'Gmail', ...googleSetting }, apps, say)),
    ...(await signInDemoAccount(consoleBase, { provider: 'whoop', name: 'wearable', client: wearable.client, doubleUrl: wearable.url, endpoints: { WHOOP_BASE_URL: wearable.url } }, apps, say)),
  ];
  return {
    connectionIds,
    close: async () => {
      await google.close();
      await wearable.close();
    },
  };
}
