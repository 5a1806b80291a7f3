import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sql } from '@pcg/shared/db';
import { upsertRecords } from '@pcg/shared/cache';
import { createAccountMatchService } from '@pcg/shared/finance';
import { createTestAgent, insertTestConnection, useTestEnvironment } from '@pcg/testkit/testing';
import type { RunningGateway } from '../../services/gateway/src/service.ts';
import { connectAgent, startTestGateway } from '../../services/gateway/test/gateway-harness.ts';
import { AccountSchema as PlaidAccountSchema, TransactionSchema as PlaidTransactionSchema } from '../../services/sync-worker/src/connectors/plaid/plaid-api.ts';
import * as plaid from '../../services/sync-worker/src/connectors/plaid/plaid-mapping.ts';
import { AccountSetSchema } from '../../services/sync-worker/src/connectors/simplefin/simplefin-mapping.ts';
import * as bridge from '../../services/sync-worker/src/connectors/simplefin/simplefin-mapping.ts';
import { countedToolCalls } from '../support/counted-tool-calls.ts';

/**
 * Issue 33, done when: two overlapping finance sources — the bank aggregator (connected first) and the
 * bank-link bridge — with transactions only one source has, pending charges and an undecided account match;
 * a scripted agent reading only what get_schema documents answers three money questions in at most two
 * calls each after one get_schema, each equal to a total worked out by hand below. The records go through
 * each connector's own mapping (provider shapes in, cache records out), as a sync writes them.
 *
 * Today is Wednesday 18 November 2026 (UTC, the person's zone): this month is 1–30 November, last month October.
 *
 * Aggregator (connected first)                      Bridge (connected second)
 *  chase.com  Total Checking 4821   2,500.00         chase.com  TOTAL CHECKING ••4821 2,500.00  (same last 4: merged)
 *  chase.com  Savings 9034         10,000.00         vanguard.com Brokerage Account  12,000.00  (bridge only)
 *  amex.com   Gold Card 1007   640.00 owed           amex.com   Gold Card (no last 4) -640.00   (undecided: asked)
 *
 * Spending this month (money out, by date; pending included):
 *  aggregator: Whole Foods 54.20, Chipotle 12.00, Uber 30.00 (card), Target 25.50 (card, pending)
 *  bridge:     Whole Foods 54.20 on 11-04 (the aggregator's, one day later: merged away), Corner Grocer 9.75,
 *              Blue Bottle 15.00 (pending, bridge only), Uber 30.00 (card: possible twin of the aggregator's),
 *              Amazon 60.00 (card, bridge only)
 *  = 54.20 + 12.00 + 30.00 + 25.50 + 9.75 + 15.00 + 60.00 = 206.45 (236.45 counting the Uber twice)
 * Net worth: 2,500.00 + 10,000.00 + 12,000.00 − 640.00 = 23,860.00 (the card's debt once)
 * Groceries last month (money out): Trader Joe's 80.10 (merged with the bridge's), Whole Foods Market 19.99
 *  (card; the bridge's copy a possible twin), Farmers Market 40.00 (bridge only) = 140.09
 */
const SPENT_THIS_MONTH = '206.45';
const NET_WORTH = '23860.00';
const GROCERIES_LAST_MONTH = '140.09';

const testEnv = useTestEnvironment();
const NOW = new Date('2026-11-18T15:00:00.000Z');
const SYNCED_AT = NOW.toISOString();
const epoch = (day: string) => Date.parse(`${day}T12:00:00Z`) / 1000;
let gateway: RunningGateway;
let agent: Client;

type Json = Record<string, unknown>;
const tools = countedToolCalls(() => agent);
const call = (name: string, args: Json) => tools.call(name, args);

/** What the agent read in get_schema; every name it uses must appear in it. */
let readText = '';
const read = <T extends string>(name: T): T => {
  expect(readText, `the agent read '${name}' in get_schema`).toContain(JSON.stringify(name));
  return name;
};
/** A name get_schema spells out in its notes' text rather than as a JSON value. */
const documented = <T extends string>(name: T): T => {
  expect(readText, `get_schema's notes name '${name}'`).toMatch(new RegExp(`\\b${name}\\b`));
  return name;
};
const question = async <T>(ask: () => Promise<T>): Promise<T> => {
  const before = tools.calls;
  const answer = await ask();
  expect(tools.calls - before, 'calls for this question').toBeLessThanOrEqual(2);
  return answer;
};
/** A total as the agent reads it: the one without possible twins when the result has one, as get_schema's notes say. */
const total = (row: Json | undefined, metric: string): string => {
  const without = `${metric}_without_possible_twins`;
  return String(row?.[without] !== undefined ? row[documented(without)] : row?.[metric]);
};
const cents = (amount: string) => Math.round(Number(amount) * 100);
const money = (value: number) => (value / 100).toFixed(2);

async function writeAccounts(connectionId: string, source: string, records: Array<Record<string, unknown>>): Promise<Map<string, string>> {
  await upsertRecords(testEnv.db, { object: 'finance.account', connectionId, source, records });
  const rows = await testEnv.db.any(sql.type(z.object({ id: z.string(), source_id: z.string() }))`SELECT id, source_id FROM finance_accounts WHERE connection_id = ${connectionId}::uuid`);
  return new Map(rows.map((row) => [row.source_id, row.id]));
}

async function seedAggregator(connectionId: string): Promise<void> {
  const chase = { institutionName: 'Chase', institutionDomain: 'chase.com', consentExpiresAt: null, syncedAt: SYNCED_AT };
  const amex = { institutionName: 'American Express', institutionDomain: 'americanexpress.com', consentExpiresAt: null, syncedAt: SYNCED_AT };
  const account = (id: string, name: string, mask: string, type: string, subtype: string, current: string) =>
    PlaidAccountSchema.parse({ account_id: id, name, mask, type, subtype, balances: { current, iso_currency_code: 'USD' } });
  const ids = await writeAccounts(connectionId, 'plaid', [
    plaid.accountRecord(account('pl-chk', 'Total Checking', '4821', 'depository', 'checking', '2500.00'), chase),
    plaid.accountRecord(account('pl-sav', 'Savings', '9034', 'depository', 'savings', '10000.00'), chase),
    plaid.accountRecord(account('pl-card', 'Gold Card', '1007', 'credit', 'credit card', '640.00'), amex),
  ]);
  // Reference 1.5: positive = money out; `date` is the posting date, or for a pending one the day it happened.
  const tx = (id: string, account: string, amount: string, date: string, name: string, [primary, detailed]: [string, string], pending = false) =>
    PlaidTransactionSchema.parse({ transaction_id: id, account_id: account, amount, iso_currency_code: 'USD', date, name, pending, personal_finance_category: { primary, detailed } });
  const transactions = [
    tx('t1', 'pl-chk', '54.20', '2026-11-03', 'WHOLE FOODS #123', ['FOOD_AND_DRINK', 'FOOD_AND_DRINK_GROCERIES']),
    tx('t2', 'pl-chk', '12.00', '2026-11-05', 'CHIPOTLE 55', ['FOOD_AND_DRINK', 'FOOD_AND_DRINK_RESTAURANT']),
    tx('t3', 'pl-chk', '-3850.00', '2026-11-01', 'ACME PAYROLL', ['INCOME', 'INCOME_WAGES']),
    tx('t4', 'pl-chk', '80.10', '2026-10-12', "TRADER JOE'S #552", ['FOOD_AND_DRINK', 'FOOD_AND_DRINK_GROCERIES']),
    tx('t5', 'pl-chk', '45.00', '2026-10-20', 'SHELL', ['TRANSPORTATION', 'TRANSPORTATION_GAS']),
    tx('t6', 'pl-card', '30.00', '2026-11-10', 'UBER TRIP', ['TRANSPORTATION', 'TRANSPORTATION_TAXIS_AND_RIDE_SHARES']),
    tx('t7', 'pl-card', '25.50', '2026-11-17', 'TARGET', ['GENERAL_MERCHANDISE', 'GENERAL_MERCHANDISE_SUPERSTORES'], true),
    tx('t8', 'pl-card', '19.99', '2026-10-28', 'WHOLE FOODS MARKET', ['FOOD_AND_DRINK', 'FOOD_AND_DRINK_GROCERIES']),
  ];
  await upsertRecords(testEnv.db, { object: 'finance.transaction', connectionId, source: 'plaid', records: transactions.map((t) => plaid.transactionRecord(t, ids.get(t.account_id))).filter((r) => r !== undefined) });
}

async function seedBridge(connectionId: string): Promise<void> {
  // Reference 2.3: positive = money in; `posted` 0 for a pending one, `transacted_at` when it happened.
  const tx = (id: string, amount: string, day: string, description: string, mcc?: string, pending = false) => ({
    id,
    posted: pending ? 0 : epoch(day),
    ...(pending ? { transacted_at: epoch(day), pending: true } : {}),
    amount,
    description,
    ...(mcc ? { mcc } : {}),
  });
  const org = (domain: string) => ({ domain, name: domain, 'sfin-url': 'https://bridge.example/simplefin' });
  const set = AccountSetSchema.parse({
    errors: [],
    accounts: [
      {
        org: org('chase.com'), id: 'CHK', name: 'TOTAL CHECKING ••4821', currency: 'USD', balance: '2500.00', 'balance-date': epoch('2026-11-18'),
        transactions: [
          tx('s1', '-54.20', '2026-11-04', 'Whole Foods 123', '5411'),
          tx('s2', '3850.00', '2026-11-01', 'ACME PAYROLL'),
          tx('s3', '-80.10', '2026-10-13', "Trader Joe's 552", '5411'),
          tx('s4', '-9.75', '2026-11-12', 'CORNER GROCER', '5411'),
          tx('s5', '-40.00', '2026-10-25', 'FARMERS MARKET', '5411'),
          tx('s6', '-15.00', '2026-11-16', 'BLUE BOTTLE', '5814', true),
        ],
      },
      { org: org('vanguard.com'), id: 'INV', name: 'Brokerage Account', currency: 'USD', balance: '12000.00', 'balance-date': epoch('2026-11-18'), transactions: [] },
      {
        org: org('americanexpress.com'), id: 'CARD', name: 'Gold Card', currency: 'USD', balance: '-640.00', 'balance-date': epoch('2026-11-18'),
        transactions: [tx('s7', '-30.00', '2026-11-11', 'UBER TRIP', '4121'), tx('s8', '-19.99', '2026-10-29', 'WHOLE FOODS MARKET', '5411'), tx('s9', '-60.00', '2026-11-14', 'AMAZON MKTPL', '5942')],
      },
    ],
  });
  const keyOf = (account: (typeof set.accounts)[number]) => `x/${account.id}`;
  const ids = await writeAccounts(connectionId, 'simplefin', set.accounts.map((account) => bridge.accountRecord(account, keyOf(account), bridge.institutionOf(account, undefined))));
  const records = set.accounts.flatMap((account) => account.transactions.map((t) => bridge.transactionRecord(account, keyOf(account), ids.get(keyOf(account)), t)));
  await upsertRecords(testEnv.db, { object: 'finance.transaction', connectionId, source: 'simplefin', records: records.filter((r) => r !== undefined) });
}

beforeAll(async () => {
  const aggregator = await insertTestConnection(testEnv.db, { sector: 'finance', provider: 'plaid', displayName: 'Aggregator' });
  await seedAggregator(aggregator);
  const bridgeConnection = await insertTestConnection(testEnv.db, { sector: 'finance', provider: 'simplefin', displayName: 'Bridge' });
  await seedBridge(bridgeConnection);
  // As after a finance sync: pairs found (checking merged, card asked) and transactions matched one by one.
  await createAccountMatchService({ db: testEnv.db }).reconcile();
  gateway = await startTestGateway(testEnv, {}, { now: () => NOW });
  agent = (await connectAgent(gateway.address, await createTestAgent(testEnv.db, { name: 'money-agent', sectors: ['finance'] }))).client;
  readText = JSON.stringify(await call('get_schema', {}));
}, 60_000);
afterAll(async () => {
  await agent?.close();
  await gateway?.close();
});

describe('money questions across two overlapping banks, each in at most two calls after one get_schema', () => {
  it('how much did I spend this month across my banks', async () => {
    const answer = await question(() =>
      call('query', {
        object: read('finance.transaction'),
        where: [
          { field: read('date'), op: 'eq', value: read('this_month') },
          { field: read('amount'), op: 'lt', value: 0 },
        ],
        aggregate: { metrics: [{ fn: 'sum', field: read('amount') }] },
      }),
    );
    const rows = answer.rows as Json[];
    expect(money(-cents(total(rows[0], 'sum_amount')))).toBe(SPENT_THIS_MONTH);
    // The Uber both sources report on the undecided card is named, not silently counted twice.
    expect(rows[0]?.sum_amount).toBe('-236.45');
    expect(String(answer.notes)).toContain('possible_twin_id');
  });

  it('what is my net worth', async () => {
    const answer = await question(() =>
      call('query', {
        object: read('finance.account'),
        aggregate: { group_by: [read('type')], metrics: [{ fn: 'sum', field: read('balance_current') }] },
      }),
    );
    const byType = new Map((answer.rows as Json[]).map((row) => [String(row.type), cents(total(row, 'sum_balance_current'))]));
    const owned = (byType.get(read('depository')) ?? 0) + (byType.get(read('investment')) ?? 0);
    const owed = (byType.get(read('credit')) ?? 0) + (byType.get(documented('loan')) ?? 0);
    expect(money(owned - owed)).toBe(NET_WORTH);
  });

  it('what did I spend on groceries last month', async () => {
    const answer = await question(() =>
      call('query', {
        object: read('finance.transaction'),
        where: [
          { field: read('category'), op: 'eq', value: read('groceries') },
          { field: read('date'), op: 'eq', value: read('last_month') },
          { field: read('amount'), op: 'lt', value: 0 },
        ],
        aggregate: { metrics: [{ fn: 'sum', field: read('amount') }] },
      }),
    );
    expect(money(-cents(total((answer.rows as Json[])[0], 'sum_amount')))).toBe(GROCERIES_LAST_MONTH);
  });

  it('keeps the spec shape: one text block of JSON indented two spaces, the new fields as additions', async () => {
    const answer = (await agent.callTool({
      name: 'query',
      arguments: { object: 'finance.transaction', where: [{ field: 'date', op: 'eq', value: 'this_month' }], select: ['date', 'posted_on', 'pending', 'category', 'provider_category', 'possible_twin_id'] },
    })) as { content: Array<{ type: string; text: string }> };
    expect(answer.content).toHaveLength(1);
    expect(answer.content[0]?.type).toBe('text');
    const parsed = JSON.parse(answer.content[0]?.text ?? '') as Json;
    expect(answer.content[0]?.text).toBe(JSON.stringify(parsed, null, 2));
    expect(parsed).toMatchObject({ object: 'finance.transaction', has_more: false });
    // The default order is by date, newest first: the pending Target charge (17th, no posting date) leads.
    const first = (parsed.rows as Json[])[0];
    expect(first).toMatchObject({ date: '2026-11-17', posted_on: null, pending: true, category: 'shopping', provider_category: 'GENERAL_MERCHANDISE_SUPERSTORES' });
  });

  it('documents the category set, that its meaning changed, date and the totals without possible twins in get_schema', () => {
    const schema = JSON.parse(readText) as { objects: Array<{ name: string; notes: string[]; fieldDocs: Record<string, string>; fields: Array<{ name: string }> }> };
    const transaction = schema.objects.find((object) => object.name === 'finance.transaction');
    for (const name of ['income', 'transfer', 'groceries', 'dining', 'shopping', 'transport', 'travel', 'utilities', 'health', 'entertainment', 'other']) expect(transaction?.fieldDocs.category).toContain(name);
    expect(transaction?.notes.join(' ')).toMatch(/category changed meaning/);
    expect(transaction?.fields.map((field) => field.name)).toEqual(expect.arrayContaining(['date', 'pending', 'posted_on', 'provider_category', 'possible_twin_id']));
    expect(transaction?.notes.join(' ')).toContain('sum_amount_without_possible_twins');
  });
});
