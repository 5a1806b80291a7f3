/**
 * The specification as the oracle: every literal cell of spec 7's error table and spec 8's limits table (and
 * the log lines and summary texts beside them) is read from the repository's copy of the spec and compared
 * with what the code uses. A cell that is no literal ("about 4 KB", "see 4.5", a described message) is listed
 * by hand with the reason, so a new or reworded row of either table fails here until it is looked at.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  AUDIT_ARGS_MAX_BYTES,
  AUDIT_LOG_LINES,
  AUDIT_PAGE_DEFAULT,
  AUDIT_PAGE_MAX,
  REDACTED_VALUE,
  REFUSAL_CAP,
  REFUSAL_WINDOW_MS,
  SENSITIVE_NAME_WORDS,
  TRUNCATED_ARGS,
  throttleSummaryText,
} from '@pcg/shared/audit';
import { auditConfig } from '@pcg/shared/config';
import { generateIngestSecret, INGEST_SECRET_PREFIX } from '@pcg/shared/crypto';
import { AGENT_KEY_PREFIX, ExpiresInDaysSchema, generateAgentKey, KEY_REFUSALS } from '@pcg/shared/grants';
import { noActiveConnection } from '@pcg/shared/reads';
import { NO_SECTORS_GRANTED } from '@pcg/shared/sign-ins';
import { FORBIDDEN_HOST_BODY } from '../../services/console/src/host-check/host-fns.ts';
import { INGEST_UNAUTHORIZED } from '../../services/console/src/routes/ingest.ts';
import { ACCESS_TOKEN_SECONDS } from '../../services/gateway/src/bridge/bridge-endpoints.ts';
import { BRIDGE_MESSAGES } from '../../services/gateway/src/bridge/bridge-errors.ts';
import { BRIDGE_RATE_LIMIT } from '../../services/gateway/src/bridge/bridge-routes.ts';
import { JSONRPC_ERRORS, keyRefusalText } from '../../services/gateway/src/mcp/jsonrpc-errors.ts';
import { MAX_SESSIONS } from '../../services/gateway/src/mcp/mcp-gateway.ts';

const spec = readFileSync(path.resolve(import.meta.dirname, '../../docs/spec/gateway-interface.md'), 'utf8');

function section(number: string): string {
  const start = spec.indexOf(`\n## ${number}. `);
  const end = spec.indexOf('\n## ', start + 1);
  if (start < 0) throw new Error(`the specification has no section ${number}`);
  return spec.slice(start, end < 0 ? undefined : end);
}

/** The body rows of the section's table, each as its cells (header and separator left out). */
function tableRows(text: string): string[][] {
  const rows = text.split('\n').filter((line) => line.startsWith('|')).map((line) => line.slice(1, -1).split(/(?<!\\)\|/).map((cell) => cell.trim()));
  return rows.slice(2);
}

/** The texts a cell quotes in backticks, in order. */
const quoted = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1]!);

type ErrorAnswer = { status?: number; code?: number; messages?: readonly string[] };
/**
 * What the code answers for a row of spec 7; or a text the row describes in its own words, which must end
 * with it; or why the row holds no literal to compare.
 */
type ErrorRowCode = ErrorAnswer | { describedAs: string } | { byHand: string };

const jsonRpc = (answer: { status: number; code: number; message: string }): ErrorAnswer => ({ status: answer.status, code: answer.code, messages: [answer.message] });

const ERROR_ROWS: Record<string, ErrorRowCode> = {
  '`POST /mcp` `initialize`, no key or a refused key': jsonRpc(JSONRPC_ERRORS.unauthorized),
  '`POST /mcp` `initialize` past 512 open sessions': jsonRpc(JSONRPC_ERRORS.tooManySessions),
  '`POST /mcp` with no session header and not `initialize`': jsonRpc(JSONRPC_ERRORS.missingSession),
  '`GET /mcp` with no session header': jsonRpc(JSONRPC_ERRORS.missingSession),
  '`DELETE /mcp` naming an unknown session': jsonRpc(JSONRPC_ERRORS.unknownSession),
  'any path but `/mcp` (bridge off)': jsonRpc(JSONRPC_ERRORS.notFound),
  'key refused at connect (tool error text)': { messages: KEY_REFUSALS.map(keyRefusalText) },
  'bridge sign-in with challenge method other than `S256` or none': { messages: [BRIDGE_MESSAGES.challengeMethod] },
  'bridge sign-in with a never-expiring key': { byHand: 'the message is described, not quoted; bridge-refusals.test.ts asserts what it says' },
  'bridge addresses while bridge is off': { byHand: 'a bare 404 the routes answer by not being registered; bridge-refusals.test.ts asserts the 404 of each address' },
  '`fetch_live` on a sector with no connection': { messages: [noActiveConnection('<name>').message] },
  '`query` on a granted sector with no source': { byHand: 'a behaviour (an empty result), no text; reads-service.test.ts asserts it' },
  'ungranted sector on a read, `fetch_live`, `list_actions`, `invoke_action`': { byHand: 'a behaviour (denied before any SQL), no text; reads-service.test.ts asserts it' },
  'push-ingest: unknown id, paused connection, no secret set, wrong secret, malformed id': { status: 401, messages: [JSON.stringify(INGEST_UNAUTHORIZED)] },
  'Console routes with a disallowed Host': { status: 403, messages: [JSON.stringify(FORBIDDEN_HOST_BODY)] },
  'mirror, missing or malformed key': { byHand: 'a bare status the mirror route sets; mirror.test.ts asserts 401 for each case' },
  'mirror, unknown, revoked or expired key': { byHand: 'a bare status the mirror route sets; mirror.test.ts asserts 403 for each case' },
  '`GET /api/audit` bad `since`, `before` or `limit`': { byHand: 'the messages are in 4.5 ("see 4.5"); audit.test.ts asserts each with the spec text' },
  'Console with no agent port running': { byHand: 'the Connect band text is described, not quoted; console.browser.test.ts asserts it names MCP_HTTP_PORT' },
  'sign-in for a provider returning no usable scopes': { describedAs: NO_SECTORS_GRANTED },
};

describe('spec 7, the error table, against the code', () => {
  const rows = tableRows(section('7'));

  it('has a line here for every row of the table, and none for a row that is gone', () => {
    expect(rows.map(([condition]) => condition).sort()).toEqual(Object.keys(ERROR_ROWS).sort());
  });

  for (const [condition = '', status = '', code = '', message = ''] of rows) {
    const ours = ERROR_ROWS[condition];
    if (ours === undefined || 'byHand' in ours) continue;
    it(`${condition}: the code answers what the row gives`, () => {
      if ('describedAs' in ours) {
        expect(message.endsWith(ours.describedAs), `"${message}" ends with the code's "${ours.describedAs}"`).toBe(true);
        return;
      }
      if (/^\d{3}$/.test(status)) expect(ours.status, 'status').toBe(Number(status));
      if (/^-\d+$/.test(code)) expect(ours.code, 'JSON-RPC code').toBe(Number(code));
      // The ingest and Host bodies are quoted whole; the other rows quote the message itself.
      expect(ours.messages, 'messages').toEqual(quoted(message));
    });
  }
});

describe('spec 8, the limits table, against the code', () => {
  const rows = new Map(tableRows(section('8')).map(([limit, value]) => [limit!, value!]));
  const value = (limit: string) => {
    const cell = rows.get(limit);
    if (cell === undefined) throw new Error(`spec 8 has no row "${limit}"`);
    return cell;
  };
  const firstNumber = (cell: string) => Number(/\d+/.exec(cell)?.[0]);
  const LISTED = [
    'open MCP sessions',
    'bridge access token lifetime',
    'bridge rate limiter',
    'counted refusal lines',
    'audit page size',
    'audit args size',
    'audit redaction',
    'audit flush interval',
    '`expiresInDays`',
    'ingest secret',
    'agent key randomness',
    'failed-reach cache by hosted agents',
  ];

  it('has a line here for every row of the table, and none for a row that is gone', () => {
    expect([...rows.keys()].sort()).toEqual([...LISTED].sort());
  });

  it('open MCP sessions', () => {
    expect(value('open MCP sessions')).toBe('512');
    expect(MAX_SESSIONS).toBe(firstNumber(value('open MCP sessions')));
  });

  it('bridge access token lifetime', () => {
    expect(ACCESS_TOKEN_SECONDS).toBe(firstNumber(value('bridge access token lifetime')));
    expect(value('bridge access token lifetime')).toMatch(/^\d+ seconds$/);
  });

  it('bridge rate limiter', () => {
    expect(value('bridge rate limiter')).toMatch(/^\d+ requests a minute$/);
    expect(BRIDGE_RATE_LIMIT).toEqual({ max: firstNumber(value('bridge rate limiter')), windowMs: 60_000 });
  });

  it('counted refusal lines', () => {
    expect(value('counted refusal lines')).toMatch(/^\d+ a minute per kind$/);
    expect({ cap: REFUSAL_CAP, windowMs: REFUSAL_WINDOW_MS }).toEqual({ cap: firstNumber(value('counted refusal lines')), windowMs: 60_000 });
  });

  it('audit page size', () => {
    const [, defaultSize, maximum] = /^default (\d+), maximum (\d+)$/.exec(value('audit page size')) ?? [];
    expect({ defaultSize: AUDIT_PAGE_DEFAULT, maximum: AUDIT_PAGE_MAX }).toEqual({ defaultSize: Number(defaultSize), maximum: Number(maximum) });
  });

  it('audit args size: the stored text, and "about 4 KB" read as 4 KiB give or take a tenth', () => {
    const cell = value('audit args size');
    expect(quoted(cell)).toEqual([TRUNCATED_ARGS]);
    expect(cell).toMatch(/^about 4 KB serialized/);
    expect(AUDIT_ARGS_MAX_BYTES).toBeGreaterThanOrEqual(4000 * 0.9);
    expect(AUDIT_ARGS_MAX_BYTES).toBeLessThanOrEqual(4096 * 1.1);
  });

  it('audit redaction: the six words, and the value that replaces', () => {
    const cell = value('audit redaction');
    const words = quoted(cell).filter((text) => !text.startsWith('['));
    expect([...SENSITIVE_NAME_WORDS]).toEqual(words);
    expect(quoted(cell).filter((text) => text.startsWith('['))).toEqual([REDACTED_VALUE]);
  });

  it('audit flush interval', () => {
    expect(value('audit flush interval')).toMatch(/^\d+ ms default$/);
    expect(auditConfig.parse({}).AUDIT_FLUSH_MS).toBe(firstNumber(value('audit flush interval')));
  });

  it('`expiresInDays`: both ends accepted, one past either end refused', () => {
    const [, low, high] = /^(\d+) to (\d+)$/.exec(value('`expiresInDays`')) ?? [];
    expect(ExpiresInDaysSchema.safeParse(Number(low)).success).toBe(true);
    expect(ExpiresInDaysSchema.safeParse(Number(high)).success).toBe(true);
    expect(ExpiresInDaysSchema.safeParse(Number(low) - 1).success).toBe(false);
    expect(ExpiresInDaysSchema.safeParse(Number(high) + 1).success).toBe(false);
  });

  it('ingest secret: its random part is that many bytes', () => {
    const bytes = firstNumber(value('ingest secret'));
    expect(value('ingest secret')).toBe(`${bytes} random bytes`);
    const { secret } = generateIngestSecret();
    expect(Buffer.from(secret.slice(INGEST_SECRET_PREFIX.length), 'base64url')).toHaveLength(bytes);
  });

  it('agent key randomness: its random part is that many bits', () => {
    const bits = firstNumber(value('agent key randomness'));
    expect(value('agent key randomness')).toBe(`${bits} bits`);
    expect(Buffer.from(generateAgentKey().slice(AGENT_KEY_PREFIX.length), 'base64url').length * 8).toBe(bits);
  });

  it('failed-reach cache by hosted agents: by hand, it is the hosted clients\' cache, which the Connect band only explains', () => {
    expect(value('failed-reach cache by hosted agents')).toBe('about five minutes');
  });

  it('the two log lines of dropped audit rows', () => {
    expect(quoted(section('8').split('\n').find((line) => line.includes('log lines')) ?? '')).toEqual([AUDIT_LOG_LINES.queueOverflow, AUDIT_LOG_LINES.flushFailed]);
  });
});

describe('spec 6, the capped refusals\' summary rows, against the code', () => {
  it('words both summaries as the spec does', () => {
    const line = section('6').split('\n').find((text) => text.startsWith('Capped refusals')) ?? '';
    expect(quoted(line).filter((text) => text.startsWith('throttled:'))).toEqual([
      throttleSummaryText('initialize', Number.NaN).replace('NaN', '<n>'),
      throttleSummaryText('bridge', Number.NaN).replace('NaN', '<n>'),
    ]);
  });
});
