import type { AuditRecorder } from '@pcg/shared/audit';
import type { DatabasePool, DirectPool } from '@pcg/shared/db';
import type { LiveRequester } from '@pcg/shared/live';
import type { Logger } from '@pcg/shared/logger';
import { createQueryEngine } from '@pcg/shared/query';
import { createActionsService, createReadService } from '@pcg/shared/reads';
import { actionTools } from './action-tools.ts';
import { readTools } from './read-tools.ts';
import type { ToolDef } from './tool-types.ts';

export type ToolSetDeps = { db: DatabasePool; direct: DirectPool; audit: AuditRecorder; log: Logger; serviceName: string; live?: LiveRequester; now?: () => Date };

/** The seven tools over the shared read and actions services: one set for the agent port and the operator's stdio session. */
export function createToolSet({ db, direct, audit, log, serviceName, live, now }: ToolSetDeps): ToolDef[] {
  const reads = createReadService({ db, engine: createQueryEngine({ db, direct }), audit, log, serviceName, live, now });
  const actions = createActionsService({ db, audit, log, live, now });
  return [...readTools(reads), ...actionTools(actions)];
}
