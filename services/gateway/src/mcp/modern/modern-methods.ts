import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Grant } from '@pcg/shared/grants';
import { MCP_INSTRUCTIONS } from '../instructions.ts';
import { JSONRPC_ERRORS, unknownToolError } from '../jsonrpc-errors.ts';
import { runTool, SERVER_VERSION, type McpServerDeps } from '../mcp-server-factory.ts';
import { invalidParamsOf } from '../request-validation.ts';
import { META_KEYS, paramHeaderMismatch, SUPPORTED_VERSIONS } from './modern-protocol.ts';
import { withParamHeaders } from './param-headers.ts';

/**
 * How long a client may keep `server/discover` and `tools/list` (revision 2026-07-28, caching): an hour. Both
 * are the same for every caller ("public"); they change only when the gateway is upgraded.
 */
export const LIST_TTL_MS = 3_600_000;

/** A modern request, after its key, envelope, headers and version have been checked. */
export type ModernCall = { id: string | number; method: string; params: Record<string, unknown>; headers: IncomingHttpHeaders; grant: Grant };

export type ModernAnswer =
  | { kind: 'result'; result: Record<string, unknown> }
  | { kind: 'error'; status: number; code: number; message: string; data?: unknown }
  /** `subscriptions/listen`: answered on an SSE stream by the lane. */
  | { kind: 'listen'; acknowledged: Record<string, unknown> };

/**
 * The methods of the modern lane: `server/discover`, `tools/list`, `tools/call` (the same seven tools, rows and
 * texts as a session) and `subscriptions/listen`. Anything else, the methods the revision removed included, is
 * 404 -32601.
 */
export function createModernMethods(deps: McpServerDeps) {
  const serverMeta = { [META_KEYS.serverInfo]: { name: deps.serviceName, version: SERVER_VERSION } };
  const complete = (fields: Record<string, unknown>) => ({ resultType: 'complete', ...fields, _meta: serverMeta });
  const byName = new Map(deps.tools.map((tool) => [tool.name, tool]));
  const names = [...byName.keys()];
  const discover = complete({
    supportedVersions: [...SUPPORTED_VERSIONS],
    capabilities: { tools: { listChanged: false } },
    instructions: MCP_INSTRUCTIONS,
    ttlMs: LIST_TTL_MS,
    cacheScope: 'public',
  });
  const toolList = complete({ tools: withParamHeaders(deps.listing), ttlMs: LIST_TTL_MS, cacheScope: 'public' });

  async function callTool(call: ModernCall): Promise<ModernAnswer> {
    // In-band errors (the call reached its method) travel on a 200, as the revision's SDK answers them.
    const invalid = invalidParamsOf({ method: 'tools/call', params: call.params });
    if (invalid !== undefined) return { kind: 'error', status: 200, code: JSONRPC_ERRORS.invalidParams.code, message: invalid };
    const name = call.params.name as string;
    const tool = byName.get(name);
    if (!tool) {
      const error = unknownToolError(name, names);
      return { kind: 'error', status: 200, ...error };
    }
    const args = call.params.arguments ?? {};
    const mismatch = paramHeaderMismatch(call.headers, name, args);
    if (mismatch !== undefined) return { kind: 'error', ...JSONRPC_ERRORS.headerMismatch, message: `${JSONRPC_ERRORS.headerMismatch.message}: ${mismatch}` };
    // No session: the request id is made unique per request, so rows of two requests never share one.
    const requestId = `${randomUUID()}:${String(call.id)}`;
    const result = await runTool(deps, tool, args, { kind: 'agent', grant: call.grant, requestId });
    return { kind: 'result', result: complete(result) };
  }

  return {
    async answer(call: ModernCall): Promise<ModernAnswer> {
      switch (call.method) {
        case 'server/discover':
          return { kind: 'result', result: discover };
        case 'tools/list':
          return { kind: 'result', result: toolList };
        case 'tools/call':
          return callTool(call);
        case 'subscriptions/listen':
          // The tool list never changes and there are no resources or prompts, so none of the requested
          // notification types is honored: the acknowledgment's filter is empty (revision 2026-07-28, subscriptions).
          return { kind: 'listen', acknowledged: {} };
        default:
          return { kind: 'error', ...JSONRPC_ERRORS.methodNotFound };
      }
    },
    /** The `_meta` every result carries: the server's identity. */
    serverMeta,
  };
}

export type ModernMethods = ReturnType<typeof createModernMethods>;
