import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { buildAuditRow, insertAuditRows } from '@pcg/shared/audit';
import { loadConfig } from '@pcg/shared/config';
import { sql } from '@pcg/shared/db';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { auditWriterConfigSchema } from '../src/config.ts';
import { startAuditWriter } from '../src/service.ts';

const testEnv = useTestEnvironment();

const counted = (agent: string) =>
  testEnv.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT coalesce(sum(calls), 0)::int8 AS n FROM activity_daily WHERE agent_id = ${agent}`);

describe('audit-writer: the activity rollup (issue 41)', () => {
  it('fills the rollup from the existing record when it starts, then counts new rows on its own timer', async () => {
    await testEnv.db.query(sql.unsafe`
      INSERT INTO audit_log (user_id, agent_id, tool, sector, decision, outcome, request_id, created_at)
      SELECT 1, 'before', 'query', 'finance', 'allow', 'ok', gen_random_uuid()::text, now() - interval '2 days' FROM generate_series(1, 3)`);
    const writer = await startAuditWriter(loadConfig(auditWriterConfigSchema, testEnv.env()), createCapturingLogger().log);
    try {
      await waitFor(async () => ((await counted('before')) === 3 ? true : undefined), 10_000, 'the backfill');
      await insertAuditRows(testEnv.db, [buildAuditRow({ agentId: 'after', tool: 'query', sector: 'mail', decision: 'allow', outcome: 'ok' }).row]);
      await waitFor(async () => ((await counted('after')) === 1 ? true : undefined), 15_000, 'the next pass');
      const alerts = await testEnv.db.anyFirst(sql.type(z.object({ key: z.string() }))`SELECT kind || ':' || agent_id AS key FROM activity_alerts ORDER BY 1`);
      expect(alerts).toEqual(['first_sector:after']);
    } finally {
      await writer.close();
    }
  });
});
