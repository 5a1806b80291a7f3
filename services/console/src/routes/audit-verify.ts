import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { AuditLedgerVerificationSchema, verifyAuditLedger } from '@pcg/shared/audit';
import type { DatabasePool } from '@pcg/shared/db';

export type AuditVerifyRouteDeps = {
  db: DatabasePool;
  /** `DATA_DIR`, where the audit-writer keeps the chain's last anchor. */
  dataDir: string;
};

/** Where the route answers; `GET /api/audit` stays exactly spec 4.5's. */
export const AUDIT_VERIFY_PATH = '/api/audit/verify';

/**
 * `GET /api/audit/verify`: walks the audit record's hash chain against the last anchor and answers with
 * the verification. An operator read of the record: not recorded (spec 6). Only one walk runs at a time;
 * a request arriving during one shares its answer rather than starting a second pass over the table.
 */
export function registerAuditVerifyRoute(app: FastifyInstance, { db, dataDir }: AuditVerifyRouteDeps): void {
  let running: ReturnType<typeof verifyAuditLedger> | undefined;
  app.withTypeProvider<ZodTypeProvider>().get(
    AUDIT_VERIFY_PATH,
    { schema: { response: { 200: AuditLedgerVerificationSchema } } },
    async () => {
      running ??= verifyAuditLedger(db, { dataDir }).finally(() => {
        running = undefined;
      });
      return running;
    },
  );
}
