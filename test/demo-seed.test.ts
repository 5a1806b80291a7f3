import { sql } from 'slonik';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CATALOGUE, findObject } from '@pcg/shared/sectors';
import { useTestEnvironment } from '@pcg/testkit/testing';
import { createAccountMatchService } from '@pcg/shared/finance';
import { createQueryEngine } from '@pcg/shared/query';
import { financeData } from '../scripts/demo/finance.ts';
import { SECOND_FINANCE_SOURCE, SECOND_SOURCE_ONLY, secondFinanceSource } from '../scripts/demo/finance-second-source.ts';
import { seedDemo } from '../scripts/demo/seed.ts';

const testEnv = useTestEnvironment();

async function rowCounts(): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const object of CATALOGUE) {
    counts[object.name] = await testEnv.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM ${sql.identifier([object.table])}`);
  }
  return counts;
}

describe('npm run seed:demo', () => {
  it('fills every object with the amounts the demo promises, and a second run duplicates nothing', async () => {
    const written = await seedDemo(testEnv.db, Date.UTC(2026, 10, 22));
    const first = await rowCounts();
    expect(first).toEqual(written);
    for (const object of CATALOGUE) expect(first[object.name]).toBeGreaterThan(0);
    expect(first['mail.message']).toBe(2000);
    expect(first['contacts.contact']).toBe(300);
    expect(first['home.entity']).toBe(40);
    expect(first['health.sleep_session']).toBe(365);

    await seedDemo(testEnv.db, Date.UTC(2026, 10, 22));
    expect(await rowCounts()).toEqual(first);
  });

  it('spreads transactions over three accounts at two institutions, with the money-out sign negative', async () => {
    const accounts = await testEnv.db.many(sql.type(z.object({ institution_domain: z.string(), n: z.number() }))`
      SELECT a.institution_domain, count(t.id)::int AS n FROM finance_accounts a
      JOIN connections c ON c.id = a.connection_id AND c.display_name = 'Demo finance'
      LEFT JOIN finance_transactions t ON t.account_id = a.id GROUP BY a.id, a.institution_domain`);
    expect(accounts).toHaveLength(3);
    expect(new Set(accounts.map((account) => account.institution_domain)).size).toBe(2);
    const sign = await testEnv.db.one(sql.type(z.object({ spent: z.number(), earned: z.number() }))`
      SELECT count(*) FILTER (WHERE amount < 0)::int AS spent, count(*) FILTER (WHERE category = 'income' AND amount > 0)::int AS earned
      FROM finance_transactions`);
    expect(sign.spent).toBeGreaterThan(1000);
    expect(sign.earned).toBeGreaterThan(20);
  });

  it('has a second finance source with one account pair that merges and one that asks the operator', async () => {
    const { open, decided } = await createAccountMatchService({ db: testEnv.db }).list();
    expect(decided).toMatchObject([{ institutionDomain: 'chase.com', state: 'same', automatic: true, first: { connectionName: 'Demo finance' }, second: { connectionName: SECOND_FINANCE_SOURCE } }]);
    expect(open).toMatchObject([{ institutionDomain: 'americanexpress.com', state: 'open', first: { lastFour: '1007' }, second: { lastFour: null } }]);
    // The merged copy's transactions repeat the first source's and are read once; what only it has is read too.
    const engine = createQueryEngine({ db: testEnv.db, direct: testEnv.direct });
    const transactions = findObject('finance.transaction');
    if (!transactions) throw new Error('finance.transaction is not in the catalogue');
    const spent = (where: unknown[] = []) =>
      engine.query(transactions, { object: 'finance.transaction', where: [{ field: 'amount', op: 'lt', value: 0 }, ...where], aggregate: { metrics: [{ fn: 'sum', field: 'amount' }] } });
    const end = Date.UTC(2026, 10, 22);
    const first = financeData(end).transactions;
    const cents = (rows: ReadonlyArray<Record<string, unknown>>) => rows.filter((t) => Number(t.amount) < 0).reduce((total, t) => total + Math.round(Number(t.amount) * 100), 0);
    // Design 8.3: the checking copy's repeats are read once and its own pending charge is read; the card's
    // copies, an open question, are read too and left out of the total without possible twins.
    const once = cents(first) + Math.round(Number(SECOND_SOURCE_ONLY.pendingCharge) * 100);
    const twins = cents(secondFinanceSource(end, first).cardCopies);
    expect(twins).toBeLessThan(0);
    expect((await spent()).rows).toEqual([{ sum_amount: ((once + twins) / 100).toFixed(2), sum_amount_without_possible_twins: (once / 100).toFixed(2) }]);
  });

  it('includes recurring and all-day calendar events', async () => {
    const kinds = await testEnv.db.one(sql.type(z.object({ recurring: z.number(), all_day: z.number() }))`
      SELECT count(*) FILTER (WHERE recurrence_id IS NOT NULL)::int AS recurring,
             count(*) FILTER (WHERE all_day AND start_date IS NOT NULL AND start_at IS NULL)::int AS all_day
      FROM calendar_events`);
    expect(kinds.recurring).toBeGreaterThan(100);
    expect(kinds.all_day).toBeGreaterThan(0);
  });
});
