import type { FuzzAnswer, FuzzRequest } from './http-exchange.ts';

/** Text that only an internal failure would put in an answer (unless the request itself carried it). */
const INTERNALS = [
  /\bat [\w.<>]+ \(?[^)\s]*\.(?:ts|js|mjs):\d+/,
  /node_modules/,
  // Upper case, as every statement of the code is written: the agent-facing texts say "select" and "from"
  // in prose (the select parameter, the from field), and those are not leaks.
  /\bSELECT\b[\s\S]{1,200}\bFROM\b/,
  /\bINSERT INTO\b/i,
  /syntax error at or near/i,
  /invalid input syntax for type/i,
  /violates [\w -]*constraint/i,
  /relation "[^"]+" does not exist/i,
  /\bSQLSTATE\b/i,
  /slonik/i,
  /\bioredis\b|\bECONNREFUSED\b/i,
  /"stack"\s*:/,
];

/** The gateway's own text for a read that failed inside (a tool error); with every store up it is a defect. */
const INTERNAL_FAILURE = 'try again later';

export function generalProblems(request: FuzzRequest, answer: FuzzAnswer, secrets: readonly string[]): string[] {
  const problems: string[] = [];
  if (answer.status >= 500) problems.push(`answered ${answer.status}`);
  const sent = typeof request.body === 'string' ? request.body : JSON.stringify(request.body ?? '') + request.path;
  for (const pattern of INTERNALS) {
    const match = pattern.exec(answer.body);
    if (match && !sent.includes(match[0])) problems.push(`internal text in the answer: ${match[0].slice(0, 80)}`);
  }
  if (answer.body.includes(INTERNAL_FAILURE) && !sent.includes(INTERNAL_FAILURE)) problems.push(`an internal failure: ${answer.body.slice(0, 200)}`);
  if (/"code"\s*:\s*-32603\b/.test(answer.body)) problems.push('a JSON-RPC internal error (-32603) for what the client sent');
  const headerText = JSON.stringify(answer.headers);
  for (const secret of secrets) {
    if (answer.body.includes(secret) || headerText.includes(secret)) problems.push('a secret came back in the answer');
  }
  return problems;
}

/** Node's default limit on a request's line and headers together (`--max-http-header-size`). */
const NODE_MAX_HEADER_BYTES = 16 * 1024;

/**
 * A request whose line and headers exceed Node's limit is refused by Node's HTTP parser with 431 before
 * any route, key or secret is read: no answer the specification fixes can apply to it.
 */
export function unreadHead(request: FuzzRequest, answer: FuzzAnswer): boolean {
  const headerBytes = Object.entries(request.headers).reduce((sum, [name, value]) => sum + Buffer.byteLength(`${name}: ${value}\r\n`), 0);
  return answer.status === 431 && Buffer.byteLength(`${request.method} ${request.path} HTTP/1.1\r\n`) + headerBytes > NODE_MAX_HEADER_BYTES;
}

/** Describes a failing exchange for the report, with long values cut. */
export function describeExchange(request: FuzzRequest, answer: FuzzAnswer | Error): string {
  const cut = (value: unknown) => {
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    return text === undefined ? 'undefined' : text.length > 400 ? `${text.slice(0, 400)}…(${text.length})` : text;
  };
  const got = answer instanceof Error ? `error ${answer.message}` : `${answer.status} ${cut(answer.body)}`;
  return `${request.method} ${request.port}:${cut(request.path)} headers=${cut(request.headers)} body=${cut(request.body)}\n  → ${got}`;
}
