import type { DatabasePool } from 'slonik';
import { upsertRecords } from '@pcg/shared/cache';
import { createAccountMatchService } from '@pcg/shared/finance';
import type { Sector } from '@pcg/shared/sectors';
import { ensureDemoConnection, markSynced, DEMO_PROVIDER } from './demo-connections.ts';
import { financeData } from './finance.ts';
import { SECOND_FINANCE_SOURCE, secondFinanceSource } from './finance-second-source.ts';
import { healthData } from './health.ts';
import { homeData } from './home.ts';
import { calendarData, contactsData, mailData } from './people.ts';

const BATCH = 1_000;

/** Fills every object with the synthetic demo year through the connectors' upsert path. Returns rows per object. */
export async function seedDemo(db: DatabasePool, end = Date.now()): Promise<Record<string, number>> {
  const finance = financeData(end);
  const health = healthData(end);
  const contacts = contactsData();
  const plan: Array<[Sector, string, Array<Record<string, unknown>>]> = [
    ['finance', 'finance.account', finance.accounts],
    ['finance', 'finance.transaction', finance.transactions],
    ['finance', 'finance.holding', finance.holdings],
    ['health', 'health.sample', health.samples],
    ['health', 'health.sleep_session', health.sleep],
    ['health', 'health.workout', health.workouts],
    ['mail', 'mail.message', mailData(end, contacts)],
    ['contacts', 'contacts.contact', contacts],
    ['calendar', 'calendar.event', calendarData(end)],
    ['home', 'home.entity', homeData(end)],
  ];
  const counts: Record<string, number> = {};
  const connections = new Map<Sector, string>();
  for (const [sector, object, records] of plan) {
    const connectionId = connections.get(sector) ?? (await ensureDemoConnection(db, sector));
    connections.set(sector, connectionId);
    for (let start = 0; start < records.length; start += BATCH) {
      await upsertRecords(db, { object, connectionId, source: DEMO_PROVIDER, records: records.slice(start, start + BATCH) });
    }
    counts[object] = records.length;
  }
  // Accounts are stored by source id; point transactions and holdings at the accounts' gateway ids.
  await linkAccounts(db, connections.get('finance') as string);
  for (const connectionId of connections.values()) await markSynced(db, connectionId);
  await seedSecondFinanceSource(db, end, finance.transactions, counts);
  return counts;
}

/** One pair of accounts that merges and one that asks the operator (spec 2.1), paired as after a sync. */
async function seedSecondFinanceSource(db: DatabasePool, end: number, firstTransactions: ReadonlyArray<Record<string, unknown>>, counts: Record<string, number>): Promise<void> {
  const connectionId = await ensureDemoConnection(db, 'finance', SECOND_FINANCE_SOURCE);
  const second = secondFinanceSource(end, firstTransactions);
  for (const [object, records] of [['finance.account', second.accounts], ['finance.transaction', second.transactions]] as const) {
    await upsertRecords(db, { object, connectionId, source: DEMO_PROVIDER, records });
    counts[object] = (counts[object] ?? 0) + records.length;
  }
  await linkAccounts(db, connectionId);
  await markSynced(db, connectionId);
  await createAccountMatchService({ db }).reconcile();
}

async function linkAccounts(db: DatabasePool, connectionId: string): Promise<void> {
  const { sql } = await import('slonik');
  for (const table of ['finance_transactions', 'finance_holdings']) {
    await db.query(sql.unsafe`
      UPDATE ${sql.identifier([table])} t SET account_id = a.id
      FROM finance_accounts a
      WHERE t.connection_id = ${connectionId}::uuid AND a.connection_id = t.connection_id AND a.source_id = t.account_id`);
  }
}
