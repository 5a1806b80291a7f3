import { z } from 'zod';

/** One auditable act as a surface reports it (spec 2.3); the producer redacts, caps and enqueues it. */
export const AuditEventSchema = z.object({
  /** The agent name; `operator` for Console acts; null for `ingest` and refused `initialize`. */
  agentId: z.string().nullable(),
  tool: z.string().min(1),
  /** The sector the call touched, or null. Never a deny reason. */
  sector: z.string().nullable(),
  decision: z.enum(['allow', 'deny']),
  denyReason: z.string().nullable().default(null),
  /** The call's parameters; redacted and capped by the producer. */
  args: z.unknown().default({}),
  /** A count only; returned data is never stored. */
  resultCount: z.number().int().nonnegative().default(0),
  outcome: z.enum(['ok', 'error']),
  requestId: z.string().optional(),
});

export type AuditEvent = z.input<typeof AuditEventSchema>;

/**
 * What every surface holds to leave an audit row. `record` never throws and never blocks: it enqueues
 * off the response path, and drops (logging `[audit] queue overflow — dropped`) past capacity.
 */
export type AuditRecorder = {
  record(event: AuditEvent): void;
};

/** The tool/act name Console acts use for the agent id column. */
export const OPERATOR_AGENT_ID = 'operator';

/** `result_count` is an integer column; a larger count is stored as this. */
export const INT4_MAX = 2_147_483_647;

export { OPERATOR_USER_ID } from '../db/operator-user.ts';

/** The log lines of spec 8, word for word; the code and the tests both use these. */
export const AUDIT_LOG_LINES = {
  queueOverflow: '[audit] queue overflow — dropped',
  /** Followed by the number of rows dropped. */
  flushFailed: '[audit] flush failed, dropped batch:',
} as const;

/** What `args` becomes when it is too big, cyclic or not serialisable (spec 8). */
export const TRUNCATED_ARGS = '[truncated]';
/** What a sensitive field's value becomes (spec 8). */
export const REDACTED_VALUE = '[redacted]';
/** "About 4 KB serialized" (spec 8): the UTF-8 length of the redacted JSON, in bytes. */
export const AUDIT_ARGS_MAX_BYTES = 4096;

/**
 * A row as it waits in the Redis queue: built, redacted and capped by the producer. `argsJson` is the
 * JSON text the producer already had to produce to measure the size, so the writer never re-serialises it.
 * `created_at` and `id` are not here: the writer's INSERT gives them.
 */
export const QueuedAuditRowSchema = z.object({
  userId: z.number().int().positive(),
  agentId: z.string().nullable(),
  tool: z.string().min(1),
  sector: z.string().nullable(),
  decision: z.enum(['allow', 'deny']),
  denyReason: z.string().nullable(),
  argsJson: z.string(),
  resultCount: z.number().int().nonnegative().max(INT4_MAX),
  outcome: z.enum(['ok', 'error']),
  requestId: z.string().min(1),
});
export type QueuedAuditRow = z.infer<typeof QueuedAuditRowSchema>;

/**
 * A queue entry as the writer reads it: the row, plus the producer and sequence number the enqueue script
 * gave it (absent on entries pushed by other means, which are written without being accounted for).
 */
export const QueuedAuditEntrySchema = QueuedAuditRowSchema.extend({
  producer: z.string().min(1).optional(),
  seq: z.number().int().positive().optional(),
  /** The producer's number before this one when that is not `seq - 1`: numbers between were refused or resent. */
  after: z.number().int().nonnegative().optional(),
});
export type QueuedAuditEntry = z.infer<typeof QueuedAuditEntrySchema>;

/** A row as `GET /api/audit` serves it: spec 2.3 without `user_id`; `id` as a string, `created_at` ISO with ms. */
export const AuditRowSchema = z.object({
  id: z.string(),
  agent_id: z.string().nullable(),
  tool: z.string(),
  sector: z.string().nullable(),
  decision: z.enum(['allow', 'deny']),
  deny_reason: z.string().nullable(),
  args: z.unknown(),
  result_count: z.number().int(),
  outcome: z.enum(['ok', 'error']),
  request_id: z.string(),
  created_at: z.string(),
});
export type AuditRow = z.infer<typeof AuditRowSchema>;
