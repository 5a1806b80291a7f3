import type { Client } from '@modelcontextprotocol/sdk/client/index.js';

type Json = Record<string, unknown>;

/**
 * A scripted agent's tool calls through the official MCP client: each answer's JSON text, a tool error
 * thrown with its text, and every call counted (`calls`), so a test can hold a question to a budget.
 */
export function countedToolCalls(agent: () => Client) {
  let calls = 0;
  return {
    get calls(): number {
      return calls;
    },
    async call(name: string, args: Json): Promise<Json> {
      calls += 1;
      const answer = (await agent().callTool({ name, arguments: args })) as { isError?: boolean; content: Array<{ text: string }> };
      const text = answer.content[0]?.text ?? '';
      if (answer.isError) throw new Error(`${name} refused: ${text}`);
      return JSON.parse(text) as Json;
    },
  };
}
