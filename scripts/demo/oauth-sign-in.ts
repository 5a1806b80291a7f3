/**
 * Signs a demo account in through the Console as a browser would: saves the double's app credentials,
 * starts the sign-in, follows the double's consent and calls back with the Console's cookie. Refuses
 * (and says why) when the Console would send the person anywhere but the double: the gateway reads a
 * provider's addresses at start, so it must run with that provider's base URL pointing at the double.
 * Answers the ids of the connections the sign-in holds (none when skipped or refused).
 */
export async function signInDemoAccount(
  consoleBase: string,
  options: { provider: string; name: string; client: { clientId: string; clientSecret: string }; doubleUrl: string; setting: string },
  say: (line: string) => void,
): Promise<string[]> {
  const saved = await fetch(`${consoleBase}/api/connect/${options.provider}/app`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(options.client) });
  const start = await fetch(`${consoleBase}/api/connect/${options.provider}/start`, { redirect: 'manual' });
  const location = start.headers.get('location') ?? '';
  if (saved.status !== 204 || !location.startsWith(options.doubleUrl)) {
    say(`${options.name} demo skipped: start the gateway with ${options.setting}=${options.doubleUrl}`);
    return [];
  }
  const cookie = (start.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
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
