import { ProtocolErrorCode, Server, type CallToolRequest, type CallToolResult, type Tool } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { Grant } from '@pcg/shared/grants';
import { DomainError } from '@pcg/shared/errors';
import type { Logger } from '@pcg/shared/logger';
import { prettyText } from '@pcg/shared/query';
import { MCP_INSTRUCTIONS } from './instructions.ts';
import { JSONRPC_ERRORS, unknownToolError } from './jsonrpc-errors.ts';
import { invalidParamsOf } from './request-validation.ts';
import type { ToolDef } from './tools/tool-types.ts';

/** The version both eras report beside the service name. */
export const SERVER_VERSION = '0.1.0';

/** tools/list, computed once per process: every session serves the same list. */
export function toolListing(tools: readonly ToolDef[]): Tool[] {
  return tools.map((tool) => ({
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: z.toJSONSchema(tool.inputSchema, { io: 'input', unrepresentable: 'any' }) as Tool['inputSchema'],
    annotations: tool.annotations,
  }));
}

function textResult(value: unknown): CallToolResult {
  return { content: [{ type: 'text', text: prettyText(value) }] };
}

/** Thrown from a request handler, the SDK answers it as this JSON-RPC error (its code, message and data). */
class ProtocolError extends Error {
  readonly code: number;
  readonly data: unknown;
  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

const CALL_TOOL = 'tools/call';

/** The SDK's own answer to a method nobody handles (Protocol: -32601 `Method not found`). */
const METHOD_NOT_FOUND = { code: ProtocolErrorCode.MethodNotFound, message: 'Method not found' };

function errorResult(message: string): CallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

export type McpServerDeps = {
  serviceName: string;
  tools: readonly ToolDef[];
  listing: readonly Tool[];
  log: Logger;
  /** Starts timing one tool call; the returned function ends it (for the latency histogram). Default none. */
  timeTool?(tool: string): () => void;
};

/**
 * One server per session (the SDK allows one transport per server). The low-level Server is used so
 * that tools/call reaches our handlers even with invalid arguments: McpServer would answer those
 * itself, and the call would leave no audit row. Tools only: no resources, no prompts.
 */
export function createMcpServer(deps: McpServerDeps, grant: Grant): Server {
  const server = new Server(
    { name: deps.serviceName, version: SERVER_VERSION },
    { capabilities: { tools: { listChanged: false } }, instructions: MCP_INSTRUCTIONS },
  );
  const byName = new Map(deps.tools.map((tool) => [tool.name, tool]));
  const names = [...byName.keys()];

  server.setRequestHandler('tools/list', async () => ({ tools: [...deps.listing] }));
  // tools/call through the SDK's public `fallbackRequestHandler` (the handler of any method with none of its
  // own), not `setRequestHandler`: Server wraps a tools/call handler set there to parse the request again and
  // the result against CallToolResultSchema, twice per call on the hot path. The params are checked once
  // (request-validation.ts: the usual shape without a parse), and textResult/errorResult build only valid
  // results (the tests read them through the SDK client, which validates them). Any other method gets the
  // SDK's own answer.
  server.fallbackRequestHandler = async (request, ctx) => {
    if (request.method !== CALL_TOOL) throw new ProtocolError(METHOD_NOT_FOUND.code, METHOD_NOT_FOUND.message);
    // The HTTP router answers a mismatch before the SDK sees it; the stdio session has no router.
    const invalid = invalidParamsOf(request);
    if (invalid !== undefined) throw new ProtocolError(JSONRPC_ERRORS.invalidParams.code, invalid);
    const params = request.params as CallToolRequest['params'];
    const tool = byName.get(params.name);
    if (!tool) {
      const error = unknownToolError(params.name, names);
      throw new ProtocolError(error.code, error.message, error.data);
    }
    const requestId = `${ctx.sessionId ?? 'session'}:${String(ctx.mcpReq.id)}`;
    return runTool(deps, tool, params.arguments ?? {}, { kind: 'agent', grant, requestId });
  };
  return server;
}

/**
 * One tool call as both eras answer it: the tool's JSON result as one text block, or a tool error with the
 * gateway's own message (never a raw error's text). The tool writes its audit row itself.
 */
export async function runTool(deps: Pick<McpServerDeps, 'log' | 'timeTool'>, tool: ToolDef, args: unknown, caller: Parameters<ToolDef['handler']>[1]): Promise<CallToolResult> {
  const done = deps.timeTool?.(tool.name);
  try {
    return textResult(await tool.handler(args, caller));
  } catch (error) {
    if (error instanceof DomainError) return errorResult(error.message);
    deps.log.error({ err: error, tool: tool.name }, 'tool failed');
    return errorResult(`${tool.name} failed; try again later`);
  } finally {
    done?.();
  }
}
