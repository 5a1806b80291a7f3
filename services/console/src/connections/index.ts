import type { AuditRecorder } from '@pcg/shared/audit';
import type { AddressPolicy } from '@pcg/shared/outbound';
import { createConnectionQueries } from '@pcg/shared/connections';
import type { DatabasePool } from '@pcg/shared/db';
import type { Logger } from '@pcg/shared/logger';
import type { CheckRequester, SignInRequester, SyncProducer } from '@pcg/shared/queues';
import { createConnectionCheckService, type ConnectionCheckService } from './connection-check-service.ts';
import { createIngestService, type IngestService } from '../ingest/ingest-service.ts';
import { createConnectionsService, type ConnectionsService } from './connections-service.ts';

export type SourcesDeps = {
  connections: ConnectionsService;
  /** The connection check (issue 32). */
  checks: ConnectionCheckService;
  ingest: IngestService;
  audit: AuditRecorder;
  /** Largest push accepted, in bytes. */
  ingestBodyLimit: number;
};

/**
 * Stands in until the Console is handed the audit producer: it logs the act (the event carries no secret)
 * and writes no audit row. `startConsole` takes the real recorder through its `audit` option.
 */
export function logOnlyAuditRecorder(log: Logger): AuditRecorder {
  return {
    record(event) {
      log.warn({ tool: event.tool, decision: event.decision, sector: event.sector }, 'audit recorder not wired; act not recorded');
    },
  };
}

/** Composes what the connection and push-ingest routes need. */
export function createSourcesDeps(options: {
  db: DatabasePool;
  sync: Pick<SyncProducer, 'schedule' | 'unschedule' | 'requestSync'>;
  credentialsKey: Buffer;
  /** The `signin` queue: an aggregator's item is removed there when its last connection is deleted. */
  signIns?: Pick<SignInRequester, 'removeItem'>;
  /** The connection check's jobs on the `live` queue; absent, nothing is checked against a source. */
  checks?: Pick<CheckRequester, 'check' | 'checkCredentials'>;
  audit: AuditRecorder;
  log: Logger;
  ingestBodyLimit: number;
  /** The outbound policy for source addresses the operator types (issue 32). */
  addressPolicy?: Pick<AddressPolicy, 'urlRefusal'>;
}): SourcesDeps {
  const queries = createConnectionQueries(options.db);
  return {
    connections: createConnectionsService({
      db: options.db,
      queries,
      sync: options.sync,
      credentialsKey: options.credentialsKey,
      audit: options.audit,
      log: options.log,
      itemRemoval: options.signIns,
      credentialCheck: options.checks,
      addressPolicy: options.addressPolicy,
    }),
    checks: createConnectionCheckService({ queries, checks: options.checks, audit: options.audit }),
    ingest: createIngestService({ db: options.db, queries }),
    audit: options.audit,
    ingestBodyLimit: options.ingestBodyLimit,
  };
}
