import { sql } from 'slonik';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { findObject, type ObjectDef } from '../sectors/index.ts';
import { useTestEnvironment } from '@pcg/testkit/testing';
import { QueryInputSchema } from './query-input.ts';
import { planQuery } from './query-plan.ts';
import { pageSql } from './query-sql.ts';

// The large cache objects have an index matching their natural order (migration cache-order-indexes),
// so a page is read off the index and stops once it is full. With sorting disabled, Postgres still
// sorts when no index gives the order: a Sort node in the plan means the index does not serve it.
const testEnv = useTestEnvironment();

type PlanNode = { 'Node Type': string; 'Index Name'?: string; 'Relation Name'?: string; 'Parent Relationship'?: string; Plans?: PlanNode[] };

function nodesOf(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(nodesOf)];
}

/** The plan of the page itself: a computed field's per-row subquery (also_reported_by sorts its few ids) is not the page's order. */
function pageNodesOf(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).filter((child) => child['Parent Relationship'] !== 'SubPlan').flatMap(pageNodesOf)];
}

async function pagePlan(input: Record<string, unknown>): Promise<PlanNode[]> {
  const object = findObject(input.object as string) as ObjectDef;
  const page = pageSql(planQuery(object, QueryInputSchema.parse(input)));
  return testEnv.db.transaction(async (tx) => {
    await tx.query(sql.unsafe`SET LOCAL enable_sort = off`);
    const [row] = await tx.any(sql.type(z.object({ 'QUERY PLAN': z.array(z.object({ Plan: z.custom<PlanNode>() })) }))`EXPLAIN (FORMAT JSON) ${page}`);
    return nodesOf(row?.['QUERY PLAN'][0]?.Plan as PlanNode);
  });
}

describe('pages in the natural order are read off the order index, with no sort', () => {
  it.each([
    ['finance.transaction', 'finance_transactions_date_idx'],
    ['health.sample', 'health_samples_start_idx'],
    ['mail.message', 'mail_messages_received_idx'],
    ['calendar.event', 'calendar_events_start_idx'],
  ])('%s', async (object, index) => {
    const nodes = pageNodesOf((await pagePlan({ object, limit: 20 }))[0] as PlanNode);
    expect(nodes.map((node) => node['Node Type'])).not.toContain('Sort');
    expect(nodes.map((node) => node['Node Type'])).not.toContain('Incremental Sort');
    expect(nodes.map((node) => node['Index Name'])).toContain(index);
  });

  it('also with a filter the index does not cover', async () => {
    const nodes = await pagePlan({ object: 'finance.transaction', where: [{ field: 'category', op: 'eq', value: 'dining' }], limit: 20 });
    expect(nodes.map((node) => node['Node Type'])).not.toContain('Incremental Sort');
    expect(nodes.map((node) => node['Index Name'])).toContain('finance_transactions_date_idx');
  });
});

// The base filter of finance reads (merged-away accounts) calls finance_merged_account_ids(): the view's
// joins are planned once per connection inside it, not again in every page's plan.
describe('the merged-accounts filter adds no join to a page plan', () => {
  it.each(['finance.account', 'finance.transaction', 'finance.holding'])('%s', async (object) => {
    const nodes = await pagePlan({ object, limit: 20 });
    const relations = nodes.flatMap((node) => (node['Relation Name'] ? [node['Relation Name']] : []));
    expect(relations.length).toBeGreaterThan(0);
    expect(relations).not.toContain('finance_account_matches');
    expect(relations.filter((relation) => relation === 'finance_accounts').length).toBeLessThanOrEqual(object === 'finance.account' ? 1 : 0);
  });
});
