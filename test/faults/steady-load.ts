import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/**
 * A steady load of `query` tool calls from a few MCP clients of one agent. A client whose session or
 * connection is lost connects again, as a real client would. Counts every call the gateway answered (each
 * answered call is one audit row produced) and when, so a test can say when service came back.
 */
export type SteadyLoad = {
  /** Tool calls answered with a result (a tool error included). */
  answered(): number;
  /** Answered calls whose result was not a tool error, since `since` (epoch ms). */
  servedSince(since: number): number;
  failures(): number;
  /** Holds new calls and resolves once none is in flight, so the audit record can settle. */
  pause(): Promise<void>;
  resume(): void;
  stop(): Promise<void>;
};

export function startSteadyLoad(mcpUrl: string, key: string, clients = 3): SteadyLoad {
  let answered = 0;
  let failures = 0;
  let running = true;
  let paused = false;
  let inFlight = 0;
  const served: number[] = [];

  async function connect(): Promise<Client> {
    const client = new Client({ name: 'steady-load', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
    return client;
  }

  async function loop(): Promise<void> {
    let client: Client | undefined;
    while (running) {
      if (paused) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        continue;
      }
      inFlight += 1;
      try {
        client ??= await connect();
        const result = await client.callTool({ name: 'query', arguments: { object: 'finance.transaction', limit: 5 } }, undefined, { timeout: 10_000 });
        answered += 1;
        if (!result.isError) served.push(Date.now());
      } catch {
        failures += 1;
        await client?.close().catch(() => undefined);
        client = undefined;
        await new Promise((resolve) => setTimeout(resolve, 100));
      } finally {
        inFlight -= 1;
      }
    }
    await client?.close().catch(() => undefined);
  }

  const loops = Array.from({ length: clients }, () => loop());
  return {
    answered: () => answered,
    servedSince: (since) => served.filter((at) => at >= since).length,
    failures: () => failures,
    async pause() {
      paused = true;
      while (inFlight > 0) await new Promise((resolve) => setTimeout(resolve, 10));
    },
    resume() {
      paused = false;
    },
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}
