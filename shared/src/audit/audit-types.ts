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
