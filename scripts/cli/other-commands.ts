import { AuditLedgerVerificationSchema, formatAuditLedgerVerification } from '@pcg/shared/audit';
import { CommandFailed, UsageError } from './cli-errors.ts';
import type { CommandInput } from './agents-commands.ts';
import { printJson, printRecord, printTable } from './output.ts';
import { statusSummary } from './status-summary.ts';

/** The filters of `GET /api/audit` (spec 4.5), passed through unchanged: the Console checks them. */
export const AUDIT_FILTERS = ['agent', 'tool', 'decision', 'sector', 'since', 'before', 'limit'] as const;
/** `time` is the row's `created_at` (spec 2.3's field, as `GET /api/audit` answers it). */
const AUDIT_COLUMNS = ['time', 'agent_id', 'tool', 'sector', 'decision', 'deny_reason', 'outcome', 'result_count'] as const;
const CONNECTION_COLUMNS = ['id', 'sector', 'provider', 'displayName', 'status', 'health', 'lastSyncedAt'] as const;

function noArguments(input: CommandInput, command: string): void {
  if (input.args.length > 0) throw new UsageError(`${command} takes no arguments`);
}

export async function auditTail(input: CommandInput): Promise<void> {
  noArguments(input, 'audit tail');
  const query = new URLSearchParams();
  for (const filter of AUDIT_FILTERS) {
    const value = input.options[filter];
    if (typeof value === 'string') query.set(filter, value);
  }
  if (!query.has('limit')) query.set('limit', '20');
  const answer = await input.console.ok('GET', `/api/audit?${query}`);
  const rows = answer.body as Array<Record<string, unknown>>;
  const next = answer.headers.get('x-gateway-audit-next');
  if (input.io.json) return printJson(input.io, { rows, hasMore: answer.headers.get('x-gateway-audit-has-more') === 'true', next });
  // A tail reads downwards: the newest row last.
  printTable(input.io, [...rows].reverse().map((row) => ({ ...row, time: row.created_at })), AUDIT_COLUMNS);
  if (next) input.io.err.write(`older rows: pcg audit tail --before '${next}' (with the same filters)\n`);
}

/** `pcg audit verify`: the Console walks the audit record's hash chain against its last anchor (issue 22). */
export async function auditVerify(input: CommandInput): Promise<void> {
  noArguments(input, 'audit verify');
  const answer = await input.console.ok('GET', '/api/audit/verify');
  const result = AuditLedgerVerificationSchema.parse(answer.body);
  if (input.io.json) printJson(input.io, result);
  else input.io.out.write(`${formatAuditLedgerVerification(result)}\n`);
  if (!result.intact) throw new CommandFailed('the audit record does not match its chain');
}

export async function status(input: CommandInput): Promise<void> {
  noArguments(input, 'status');
  const answer = await input.console.call('GET', '/api/status');
  if (input.io.json) printJson(input.io, answer.body);
  else input.io.out.write(statusSummary(answer.body, input.console.base));
  // 503 means a store is down: the answer is still shown, and the exit status says it.
  if (answer.status !== 200) throw new CommandFailed(`the Console answered ${answer.status}: a dependency is down`);
}

function connectionId(input: CommandInput, verb: string): string {
  const [id, ...rest] = input.args;
  if (!id || rest.length > 0) throw new UsageError(`connections ${verb} takes one connection id (see pcg connections list)`);
  return encodeURIComponent(id);
}

export const connectionsCommands: Record<string, (input: CommandInput) => Promise<void>> = {
  async list(input) {
    noArguments(input, 'connections list');
    const { body } = await input.console.ok('GET', '/api/connections');
    printTable(input.io, (body as { connections: Array<Record<string, unknown>> }).connections, CONNECTION_COLUMNS);
  },
  async sync(input) {
    const { body } = await input.console.ok('POST', `/api/connections/${connectionId(input, 'sync')}/sync`);
    const { connection, jobId } = body as { connection: Record<string, unknown>; jobId: string };
    printRecord(input.io, input.io.json ? { connection, jobId } : { ...connection, jobId });
  },
  async pause(input) {
    await changed(input, 'pause');
  },
  async resume(input) {
    await changed(input, 'resume');
  },
};

async function changed(input: CommandInput, verb: 'pause' | 'resume'): Promise<void> {
  const { body } = await input.console.ok('POST', `/api/connections/${connectionId(input, verb)}/${verb}`);
  const { connection, warning } = body as { connection: Record<string, unknown>; warning?: string };
  if (input.io.json) return printJson(input.io, body);
  printRecord(input.io, connection);
  if (warning) input.io.err.write(`${warning}\n`);
}
