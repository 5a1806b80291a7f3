/** The few Console calls the demo makes; it uses the running gateway like an operator would. */
export type DemoConnection = { id: string; provider: string; sector?: string; displayName: string; status: string; lastSyncedAt: string | null; lastError: string | null; actionCount: number };

export function consoleClient(base: string) {
  async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
    return (text ? JSON.parse(text) : undefined) as T;
  }
  return {
    async reachable(): Promise<boolean> {
      return fetch(`${base}/healthz`).then((response) => response.ok, () => false);
    },
    list: async () => (await call<{ connections: DemoConnection[] }>('GET', '/api/connections')).connections,
    create: (body: unknown) => call<{ connection: DemoConnection; connections?: DemoConnection[]; ingestSecret?: string }>('POST', '/api/connections', body),
    update: (id: string, body: unknown) => call<{ connection: DemoConnection }>('PATCH', `/api/connections/${id}`, body),
    act: (id: string, act: 'sync' | 'pause' | 'resume') => call<{ connection: DemoConnection }>('POST', `/api/connections/${id}/${act}`),
    rotateSecret: (id: string) => call<{ connection: DemoConnection; ingestSecret: string }>('POST', `/api/connections/${id}/rotate-secret`),
    remove: (id: string) => call<void>('DELETE', `/api/connections/${id}`),
  };
}
