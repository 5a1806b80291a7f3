import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const eslint = new ESLint({ cwd: repoRoot });

/** The `no-restricted-syntax` messages the repository's lint config gives `code`, as if it were gateway source. */
async function restrictedSyntaxIn(code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: `${repoRoot}services/gateway/src/mcp/lint-probe.ts` });
  return (result?.messages ?? []).filter((message) => message.ruleId === 'no-restricted-syntax').map((message) => message.message);
}

describe('lint forbids reaching past the MCP SDK public API (issue 38)', () => {
  it.each([
    [
      "Protocol.prototype's setRequestHandler past Server's override",
      "import { Server } from '@modelcontextprotocol/sdk/server/index.js';\nexport const set = (Object.getPrototypeOf(Server.prototype) as Server).setRequestHandler;\n",
      2,
    ],
    ['a private field of the transport', 'export const size = (transport: { _streamMapping: Map<string, unknown> }) => transport._streamMapping.size;\n', 1],
    ['a private field read by its name in brackets', "export const size = (transport: Record<string, Map<string, unknown>>) => transport['_requestResponseMap']?.size;\n", 1],
    ['the Protocol class from v2', "import { Protocol } from '@modelcontextprotocol/server';\nexport const P = Protocol;\n", 1],
    ['the Protocol module of v1', "import { Protocol } from '@modelcontextprotocol/sdk/shared/protocol.js';\nexport const P = Protocol;\n", 2],
    ["a file of v2's build", "import { Server } from '@modelcontextprotocol/server/dist/index.mjs';\nexport const S = Server;\n", 1],
  ])('refuses %s', async (_what, code, count) => {
    expect(await restrictedSyntaxIn(code)).toHaveLength(count);
  });

  it("accepts the SDK's public API and MCP's own `_meta` field", async () => {
    const code = [
      "import { Server } from '@modelcontextprotocol/sdk/server/index.js';",
      "import { ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';",
      "const server = new Server({ name: 'n', version: '1' }, { capabilities: { tools: {} } });",
      'server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [] }));',
      "server.fallbackRequestHandler = async (request) => ({ _meta: request.params?._meta ?? {} });",
      'export { server };',
      '',
    ].join('\n');
    expect(await restrictedSyntaxIn(code)).toEqual([]);
  });
});
