import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { useTestEnvironment } from '@pcg/testkit/testing';
import { sql } from '../db/index.ts';
import { buildAuditRow } from '../audit/audit-fns.ts';
import { insertAuditRows } from '../audit/audit-queries.ts';
import type { AuditEvent } from '../audit/audit-types.ts';
import { rollUpActivityOnce } from './activity-rollup.ts';
import { createActivityDeriver } from './activity-deriver.ts';
import { createAlertStore } from './alerts.ts';
import { readActivity } from './activity-reads.ts';
import { createCapturingLogger } from '@pcg/testkit/testing';

const testEnv = useTestEnvironment();

type Call = { agent: string | null; tool?: string; sector: string | null; decision?: 'allow' | 'deny'; args?: unknown };

/** Rows as an older gateway left them, at a chosen time (the record before the rollup existed). */
async function insertOldRows(calls: readonly Call[], createdAt: string): Promise<void> {
  for (const call of calls) {
    await testEnv.db.query(sql.unsafe`
      INSERT INTO audit_log (user_id, agent_id, tool, sector, decision, args, outcome, request_id, created_at)
      VALUES (1, ${call.agent}, ${call.tool ?? 'query'}, ${call.sector}, ${call.decision ?? 'allow'}, ${JSON.stringify(call.args ?? {})}::jsonb, 'ok',
              ${crypto.randomUUID()}, ${createdAt}::timestamptz)`);
  }
}

/** One flush of the audit-writer: the rows share one created_at, as spec 2.3 says. */
async function flush(calls: readonly Call[]): Promise<void> {
  const rows = calls.map((call) => {
    const event: AuditEvent = {
      agentId: call.agent,
      tool: call.tool ?? 'query',
      sector: call.sector,
      decision: call.decision ?? 'allow',
      denyReason: call.decision === 'deny' ? 'sector not granted' : null,
      args: call.args ?? {},
      outcome: 'ok',
    };
    return buildAuditRow(event).row;
  });
  await insertAuditRows(testEnv.db, rows);
}

const today = () => new Date().toISOString().slice(0, 10);
const times = (count: number, call: Call): Call[] => Array.from({ length: count }, () => call);

async function rollUpAll(batchSize?: number): Promise<number> {
  let total = 0;
  for (;;) {
    const pass = await rollUpActivityOnce(testEnv.db, batchSize);
    total += pass.rows;
    if (pass.rows === 0) return total;
  }
}

const CountsSchema = z.object({ day: z.string(), agent_id: z.string().nullable(), sector: z.string().nullable(), tool: z.string(), decision: z.string(), calls: z.number() });

/** The rollup's counts and the same counts taken from audit_log directly, in one order. */
async function rollupAgainstRecord() {
  const rollup = await testEnv.db.any(sql.type(CountsSchema)`
    SELECT to_char(day, 'YYYY-MM-DD') AS day, agent_id, sector, tool, decision, calls FROM activity_daily
    ORDER BY 1, 2 NULLS FIRST, 3 NULLS FIRST, 4, 5`);
  const record = await testEnv.db.any(sql.type(CountsSchema)`
    SELECT to_char((created_at AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS day, agent_id, sector, tool, decision, count(*)::int8 AS calls
    FROM audit_log GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2 NULLS FIRST, 3 NULLS FIRST, 4, 5`);
  return { rollup, record };
}

const alerts = {
  list: () => createAlertStore(testEnv.db).list(),
  countNew: () => createAlertStore(testEnv.db).countNew(),
  markSeen: (id: string) => createAlertStore(testEnv.db).markSeen(id),
  markAllSeen: () => createAlertStore(testEnv.db).markAllSeen(),
};
const alertsOf = async (agent: string) => (await alerts.list()).filter((alert) => alert.agent === agent);

// The tests run in order on one database: the first builds the rollup from rows written before it existed.
describe('activity rollup and alerts (design 8.5, issue 41)', () => {
  it('on first start counts every existing row per day, agent, sector, tool and decision, and no old pair raises an alert', async () => {
    await insertOldRows([...times(3, { agent: 'old-agent', sector: 'finance', args: { object: 'finance.transaction' } }), { agent: 'old-agent', sector: 'mail', decision: 'deny' }], '2026-10-01T10:00:00Z');
    await insertOldRows([...times(2, { agent: 'old-agent', sector: 'health' }), { agent: null, tool: 'ingest', sector: 'health' }, { agent: 'old-agent', tool: 'describe_context', sector: null }], '2026-10-02T23:59:59.999Z');
    await insertOldRows(times(12, { agent: 'old-agent', sector: 'mail', decision: 'deny' }), '2026-10-03T08:00:00Z');
    await flush([{ agent: 'old-agent', sector: 'calendar' }, { agent: 'operator', tool: 'export', sector: null }]);

    // A batch of 4 rows: the mark moves across rows that share one created_at without losing or repeating one.
    expect(await rollUpAll(4)).toBe(22);
    const { rollup, record } = await rollupAgainstRecord();
    expect(rollup).toEqual(record);
    expect(rollup).toContainEqual({ day: '2026-10-01', agent_id: 'old-agent', sector: 'finance', tool: 'query', decision: 'allow', calls: 3 });
    expect(rollup).toContainEqual({ day: '2026-10-03', agent_id: 'old-agent', sector: 'mail', tool: 'query', decision: 'deny', calls: 12 });
    expect(await alerts.list()).toEqual([]);
  });

  it('a second pass and a second start count nothing twice (the backfill is idempotent)', async () => {
    const before = await rollupAgainstRecord();
    expect(await rollUpAll()).toBe(0);
    expect(await createActivityDeriver({ db: testEnv.db, log: createCapturingLogger().log }).runOnce()).toBe(0);
    expect((await rollupAgainstRecord()).rollup).toEqual(before.rollup);
  });

  it('keeps each agent’s first and last use of a sector and of an object; args cut to [truncated] make the object unknown', async () => {
    await flush([{ agent: 'reader', sector: 'finance', args: { object: 'finance.account' } }]);
    await flush([{ agent: 'reader', sector: 'finance', args: '[truncated]' }, { agent: 'reader', sector: 'finance', args: { object: 'finance.account' } }]);
    await rollUpAll();
    const view = await readActivity(testEnv.db);
    const sector = view.sectorUses.find((use) => use.agent === 'reader' && use.sector === 'finance');
    expect(sector?.calls).toBe(3);
    expect(sector && sector.firstAt < sector.lastAt).toBe(true);
    const objects = view.objectUses.filter((use) => use.agent === 'reader');
    expect(objects.map((use) => [use.object, use.calls])).toEqual([
      ['finance.account', 2],
      [null, 1],
    ]);
    // The old agent's object from the backfill is kept with its old first use.
    expect(view.objectUses.find((use) => use.agent === 'old-agent')).toMatchObject({ object: 'finance.transaction', firstAt: '2026-10-01T10:00:00.000Z', calls: 3 });
  });

  it('raises an alert for an agent’s first use of a sector and of an object, and none for a pair it has used before', async () => {
    const newAgent = (await alertsOf('reader')).map((alert) => [alert.kind, alert.sector, alert.object]);
    expect(newAgent).toEqual(expect.arrayContaining([['first_sector', 'finance', null], ['first_object', 'finance', 'finance.account']]));
    expect(newAgent).toHaveLength(2);
    await flush([{ agent: 'old-agent', sector: 'finance', args: { object: 'finance.transaction' } }, { agent: 'old-agent', sector: 'home', args: { object: 'home.entity' } }]);
    await rollUpAll();
    expect((await alertsOf('old-agent')).map((alert) => [alert.kind, alert.sector, alert.object]).sort()).toEqual([
      ['first_object', 'home', 'home.entity'],
      ['first_sector', 'home', null],
    ]);
  });

  it('raises one refusal-burst alert at 10 denies by one agent within 5 minutes, and none at 9', async () => {
    await flush(times(9, { agent: 'nine-denied', sector: 'mail', decision: 'deny' }));
    await flush(times(4, { agent: 'burst', sector: 'mail', decision: 'deny' }));
    await rollUpAll();
    await flush(times(6, { agent: 'burst', sector: 'mail', decision: 'deny' }));
    await rollUpAll();
    await flush(times(10, { agent: 'burst', sector: 'mail', decision: 'deny' }));
    await rollUpAll();
    expect(await alertsOf('nine-denied')).toEqual([]);
    const bursts = (await alertsOf('burst')).filter((alert) => alert.kind === 'refusal_burst');
    expect(bursts).toHaveLength(1);
    expect(bursts[0]?.detail).toEqual({ denies: 10, minutes: 5 });
  });

  it('raises a volume alert when a day’s calls are at least 100 and more than 10 times the median of the agent’s previous active days', async () => {
    // Usual days (before the baseline, so they raise nothing themselves): 8, 9 and 30 calls; median 9.
    await testEnv.db.query(sql.unsafe`
      INSERT INTO activity_daily (user_id, day, agent_id, sector, tool, decision, calls) VALUES
        (1, (now() AT TIME ZONE 'UTC')::date - 3, 'busy', 'health', 'query', 'allow', 8), (1, (now() AT TIME ZONE 'UTC')::date - 2, 'busy', 'health', 'query', 'allow', 9),
        (1, (now() AT TIME ZONE 'UTC')::date - 1, 'busy', 'health', 'query', 'allow', 30),
        (1, (now() AT TIME ZONE 'UTC')::date - 3, 'steady', 'health', 'query', 'allow', 10), (1, (now() AT TIME ZONE 'UTC')::date - 2, 'steady', 'health', 'query', 'allow', 10)`);
    await flush(times(91, { agent: 'busy', sector: 'health' }));
    await flush(times(100, { agent: 'steady', sector: 'health' }));
    await rollUpAll();
    expect((await alertsOf('busy')).filter((alert) => alert.kind === 'volume_spike')).toEqual([]);
    // 100 is not more than 10 x 10.
    expect((await alertsOf('steady')).filter((alert) => alert.kind === 'volume_spike')).toEqual([]);
    await flush(times(9, { agent: 'busy', sector: 'health' }));
    await rollUpAll();
    const spikes = (await alertsOf('busy')).filter((alert) => alert.kind === 'volume_spike');
    expect(spikes).toHaveLength(1);
    expect(spikes[0]?.detail).toMatchObject({ calls: 100, usual: 9 });
    await flush(times(50, { agent: 'busy', sector: 'health' }));
    await rollUpAll();
    expect((await alertsOf('busy')).filter((alert) => alert.kind === 'volume_spike')).toHaveLength(1);
  });

  it('raises an alert each time a connection comes to need the person (needs_sign_in), once', async () => {
    const id = await testEnv.db.oneFirst(sql.type(z.object({ id: z.string() }))`
      INSERT INTO connections (user_id, provider, sector, display_name) VALUES (1, 'google', 'calendar', 'Work calendar') RETURNING id::text`);
    const deriver = createActivityDeriver({ db: testEnv.db, log: createCapturingLogger().log });
    await deriver.runOnce();
    const setStatus = (status: string) => testEnv.db.query(sql.unsafe`UPDATE connections SET status = ${status} WHERE id = ${id}::uuid`);
    const raised = async () => (await alerts.list()).filter((alert) => alert.kind === 'needs_person' && alert.connectionId === id);
    expect(await raised()).toEqual([]);
    await setStatus('needs_sign_in');
    await deriver.runOnce();
    await deriver.runOnce();
    expect(await raised()).toHaveLength(1);
    expect((await raised())[0]?.detail).toMatchObject({ displayName: 'Work calendar' });
    await setStatus('active');
    await deriver.runOnce();
    await setStatus('needs_sign_in');
    await deriver.runOnce();
    expect(await raised()).toHaveLength(2);
  });

  it('counts new alerts and marks one or all seen', async () => {
    const listed = await alerts.list();
    const fresh = listed.filter((alert) => alert.state === 'new');
    expect(await alerts.countNew()).toBe(fresh.length);
    expect(fresh.length).toBeGreaterThan(1);
    expect(await alerts.markSeen(fresh[0]!.id)).toBe(true);
    expect(await alerts.countNew()).toBe(fresh.length - 1);
    expect(await alerts.markSeen('999999')).toBe(false);
    await alerts.markAllSeen();
    expect(await alerts.countNew()).toBe(0);
  });

  it('the daily counts still equal audit_log counted directly after all the passes', async () => {
    const { rollup, record } = await rollupAgainstRecord();
    // The volume test's usual days were put in the rollup only.
    const seeded = (row: z.infer<typeof CountsSchema>) => (row.agent_id === 'busy' || row.agent_id === 'steady') && row.day < today();
    expect(rollup.filter((row) => !seeded(row))).toEqual(record);
  });
});
