/** The JSON-RPC error answers of spec 7 for the agent port; code and tests use these constants. */
export const JSONRPC_ERRORS = {
  notFound: { status: 404, code: -32601, message: 'Not found' },
  unauthorized: { status: 401, code: -32001, message: 'Unauthorized' },
  tooManySessions: { status: 503, code: -32000, message: 'Too many sessions' },
  missingSession: { status: 400, code: -32000, message: 'Missing or invalid Mcp-Session-Id' },
  unknownSession: { status: 404, code: -32001, message: 'Unknown session' },
} as const;

export type JsonRpcErrorAnswer = (typeof JSONRPC_ERRORS)[keyof typeof JSONRPC_ERRORS];

export function jsonRpcErrorBody(answer: { code: number; message: string }, id: string | number | null = null) {
  return { jsonrpc: '2.0' as const, error: { code: answer.code, message: answer.message }, id };
}
