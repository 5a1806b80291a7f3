import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { AuditLedgerVerificationSchema, verifyAuditLedger, type AuditLedgerVerification } from '@pcg/shared/audit';
import type { DatabasePool } from '@pcg/shared/db';

export type AuditVerifyRouteDeps = {
  db: DatabasePool;
  /** `DATA_DIR`, where the audit-writer keeps the chain's last anchor. */
  dataDir: string;
};

/** Where the route answers; `GET /api/audit` stays exactly spec 4.5's. */
export const AUDIT_VERIFY_PATH = '/api/audit/verify';

/**
 * The Console's walks of the audit chain: one at a time (a request arriving during one shares its
 * answer rather than starting a second pass over the table), and the last answer kept for `/metrics`.
 */
export function createLedgerVerifier({ db, dataDir }: AuditVerifyRouteDeps) {
  let running: Promise<AuditLedgerVerification> | undefined;
  let last: AuditLedgerVerification | undefined;
  return {
    verify(): Promise<AuditLedgerVerification> {
      running ??= verifyAuditLedger(db, { dataDir })
        .then((result) => (last = result))
        .finally(() => {
          running = undefined;
        });
      return running;
    },
    last: () => last,
  };
}

export type LedgerVerifier = ReturnType<typeof createLedgerVerifier>;

/**
 * `GET /api/audit/verify`: walks the audit record's hash chain against the last anchor and answers with
 * the verification. An operator read of the record: not recorded (spec 6).
 */
export function registerAuditVerifyRoute(app: FastifyInstance, { verifier }: { verifier: LedgerVerifier }): void {
  app.withTypeProvider<ZodTypeProvider>().get(AUDIT_VERIFY_PATH, { schema: { response: { 200: AuditLedgerVerificationSchema } } }, () => verifier.verify());
}
