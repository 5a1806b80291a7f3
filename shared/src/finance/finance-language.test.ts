import { sql } from 'slonik';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { useTestEnvironment } from '@pcg/testkit/testing';
import { inferredAccountKind } from './account-types.ts';
import { FINANCE_CATEGORIES } from './categories.ts';

// Issue 33, one category language and one account-type rule: the database derives `category` and infers
// account kinds for cached rows; the connectors and get_schema use the TypeScript side. They must agree.
const testEnv = useTestEnvironment();

const categoryOf = (provider: string | null) =>
  testEnv.db.oneFirst(sql.type(z.object({ category: z.string().nullable() }))`SELECT finance_category(${provider}) AS category`);

describe('the category language', () => {
  it.each([
    // The bank aggregator's personal_finance_category (reference 1.5), detailed and primary.
    ['FOOD_AND_DRINK_GROCERIES', 'groceries'],
    ['FOOD_AND_DRINK_RESTAURANT', 'dining'],
    ['FOOD_AND_DRINK', 'dining'],
    ['INCOME_WAGES', 'income'],
    ['INCOME', 'income'],
    ['TRANSFER_IN_DEPOSIT', 'transfer'],
    ['LOAN_PAYMENTS_CREDIT_CARD_PAYMENT', 'transfer'],
    ['LOAN_PAYMENTS_MORTGAGE_PAYMENT', 'loan_payment'],
    ['BANK_FEES_ATM_FEES', 'fees'],
    ['ENTERTAINMENT_TV_AND_MOVIES', 'entertainment'],
    ['GENERAL_MERCHANDISE_SUPERSTORES', 'shopping'],
    ['HOME_IMPROVEMENT_HARDWARE', 'housing'],
    ['RENT_AND_UTILITIES_RENT', 'housing'],
    ['RENT_AND_UTILITIES_GAS_AND_ELECTRICITY', 'utilities'],
    ['MEDICAL_PHARMACIES_AND_SUPPLEMENTS', 'health'],
    ['PERSONAL_CARE_GYMS_AND_FITNESS_CENTERS', 'health'],
    ['GENERAL_SERVICES_INSURANCE', 'services'],
    ['GOVERNMENT_AND_NON_PROFIT_DONATIONS', 'services'],
    ['TRANSPORTATION_GAS', 'transport'],
    ['TRAVEL_FLIGHTS', 'travel'],
    // The bridge's merchant category codes (ISO 18245).
    ['mcc:5411', 'groceries'],
    ['mcc:5812', 'dining'],
    ['mcc:5541', 'transport'],
    ['mcc:4511', 'travel'],
    ['mcc:5912', 'health'],
    ['mcc:5311', 'shopping'],
    ['mcc:0742', 'other'],
    // The demo's words, and what is not known.
    ['groceries', 'groceries'],
    ['subscriptions', 'entertainment'],
    ['something new', 'other'],
    [null, null],
  ] as const)('maps %s to %s', async (provider, category) => {
    const mapped = await categoryOf(provider);
    expect(mapped).toBe(category);
    if (mapped !== null) expect(Object.keys(FINANCE_CATEGORIES)).toContain(mapped);
  });

  it('maps every word of the set to itself', async () => {
    for (const name of Object.keys(FINANCE_CATEGORIES)) expect(await categoryOf(name)).toBe(name);
  });
});

describe('the account type rule for sources that name none', () => {
  it.each([
    ['Venture Rewards Card', false, 'credit', 'credit card'],
    ['VISA SIGNATURE ••1234', false, 'credit', 'credit card'],
    ['AMEX PLATINUM', false, 'credit', 'credit card'],
    ['Home Mortgage', false, 'loan', 'mortgage'],
    ['Student Loan', false, 'loan', 'student'],
    ['Auto Loan 4411', false, 'loan', 'auto'],
    ['Personal Line of Credit', false, 'loan', null],
    ['Company 401(k)', false, 'investment', '401k'],
    ['Roth IRA', false, 'investment', 'ira'],
    ['Individual Brokerage', false, 'investment', 'brokerage'],
    ['Taxable', true, 'investment', 'brokerage'],
    ['TOTAL CHECKING 4821', false, 'depository', 'checking'],
    ['Money Market', false, 'depository', 'money market'],
    ['Online Savings', false, 'depository', 'savings'],
    ['Everyday', false, null, null],
    ['Credit Union Share', false, null, null],
  ] as const)('reads %s (holdings: %s) as %s / %s, in the connector and in the database alike', async (name, hasHoldings, type, subtype) => {
    expect(inferredAccountKind(name, hasHoldings)).toEqual({ type, subtype });
    const stored = await testEnv.db.oneFirst(sql.type(z.object({ kind: z.array(z.string().nullable()) }))`SELECT finance_inferred_account_kind(${name}, ${hasHoldings}) AS kind`);
    expect(stored).toEqual([type, subtype]);
  });
});
