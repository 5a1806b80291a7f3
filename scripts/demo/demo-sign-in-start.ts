import type { DemoEndpoints } from '@pcg/shared/providers';

/**
 * Starts a demo sign-in at the Console (`POST /api/connect/:provider/demo-start`, issue 42): the sign-in it
 * makes is marked with these loopback stand-ins, and only its addresses (sign-in, token exchange, refresh,
 * syncs) go to them, with no setting and no restart of the gateway. Answers where the browser goes next and
 * the cookie that binds the sign-in to it, or why the Console refused.
 */
export async function startDemoSignIn(consoleBase: string, provider: string, endpoints: DemoEndpoints): Promise<{ location: string; cookie: string } | { refused: string }> {
  const started = await fetch(`${consoleBase}/api/connect/${provider}/demo-start`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ endpoints }) });
  const body = (await started.json()) as { location?: string; error?: string; message?: string };
  if (!started.ok || !body.location) return { refused: body.message ?? body.error ?? `HTTP ${started.status}` };
  return { location: body.location, cookie: (started.headers.get('set-cookie') ?? '').split(';')[0] ?? '' };
}
