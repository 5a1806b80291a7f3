import type { KeyRefusal } from '@pcg/shared/grants';

/** The JSON-RPC error answers of the agent port (spec 7, design 4.7); code and tests use these constants. */
export const JSONRPC_ERRORS = {
  notFound: { status: 404, code: -32601, message: 'Not found' },
  unauthorized: { status: 401, code: -32001, message: 'Unauthorized' },
  tooManySessions: { status: 503, code: -32000, message: 'Too many sessions' },
  missingSession: { status: 400, code: -32000, message: 'Missing or invalid Mcp-Session-Id' },
  unknownSession: { status: 404, code: -32001, message: 'Unknown session' },
  /** The grant store did not answer; sent with `Retry-After`, never a 401 (which would start a new sign-in). */
  storeUnavailable: { status: 503, code: -32000, message: 'Service unavailable; try again shortly' },
  /** A request whose JSON-RPC id is already in flight on the session (the transport would answer only one). */
  duplicateRequestId: { status: 409, code: -32600, message: 'duplicate request id in flight' },
  /** A request whose params do not match its method's schema; the message is followed by the fields. */
  invalidParams: { status: 400, code: -32602, message: 'Invalid params' },
  /** A request to /mcp or a bridge route whose `Origin` is present and not allowed (design 7.3). */
  forbiddenOrigin: { status: 403, code: -32000, message: 'Forbidden origin' },
  /** A request to /mcp or a bridge route whose `Host` is not allowed (design 7.3). */
  forbiddenHost: { status: 403, code: -32000, message: 'Forbidden host' },
  /**
   * A `Last-Event-ID` this session gave out whose events are no longer kept: the answer it led to is gone,
   * so the client must send its request again (not a 400, which would say the
   * request was malformed). 410: what it names existed and is gone for good.
   */
  eventsExpired: { status: 410, code: -32000, message: 'Events expired: what followed this Last-Event-ID is no longer kept; send the request again' },
  /** A POST on a session with an empty body. */
  emptyBody: { status: 400, code: -32700, message: 'Parse error: empty body' },
  /** Revision 2026-07-28: a request that is not one JSON-RPC request or notification object. */
  invalidRequest: { status: 400, code: -32600, message: 'Invalid Request' },
  /** Revision 2026-07-28: mirrored headers missing or disagreeing with the body; the message is followed by the detail. */
  headerMismatch: { status: 400, code: -32020, message: 'Header mismatch' },
  /** Revision 2026-07-28: `UnsupportedProtocolVersionError`, with `data: {supported, requested}`. */
  unsupportedProtocolVersion: { status: 400, code: -32022, message: 'Unsupported protocol version' },
  /** Revision 2026-07-28: a method the modern lane does not serve (removed ones included). */
  methodNotFound: { status: 404, code: -32601, message: 'Method not found' },
} as const;

export type JsonRpcErrorAnswer = (typeof JSONRPC_ERRORS)[keyof typeof JSONRPC_ERRORS];

/** Tool names longer than this are cut in the answer: the name is the caller's text. */
const MAX_SHOWN_TOOL_NAME = 100;

/**
 * A tools/call naming no tool of the gateway is a protocol error (MCP tools: unknown tool is -32602), not a
 * tool result: nothing ran, and no audit row is written, since it is not one of the seven tools.
 */
export function unknownToolError(name: string, tools: readonly string[]): { code: number; message: string; data: { tools: string[] } } {
  const shown = name.length > MAX_SHOWN_TOOL_NAME ? `${name.slice(0, MAX_SHOWN_TOOL_NAME)}…` : name;
  return {
    code: JSONRPC_ERRORS.invalidParams.code,
    message: `Unknown tool: '${shown}'; the tools are ${tools.join(', ')}`,
    data: { tools: [...tools] },
  };
}

/** Seconds a client is told to wait before retrying after `storeUnavailable`: the Console's, one value for both ports. */
export { STORE_RETRY_AFTER_SECONDS } from '@pcg/shared/http';

/** Spec 3.1 and 7: the refusal texts of a key refused at connect, word for word. */
export const keyRefusalText = (reason: KeyRefusal): string => `access denied: ${reason}`;

/** A key that still resolves, but whose grant changed while its session was starting (design 4.7). */
export const GRANT_CHANGED_TEXT = 'access denied: the grant changed while the session was starting; connect again';

/** The JSON-RPC error envelope; `data` carries a refusal's exact text when there is one. */
export function jsonRpcErrorBody(answer: { code: number; message: string }, id: string | number | null = null, data?: string) {
  const error = data === undefined ? { code: answer.code, message: answer.message } : { code: answer.code, message: answer.message, data };
  return { jsonrpc: '2.0' as const, error, id };
}
