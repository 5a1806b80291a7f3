import { beforeAll, describe, expect, it } from 'vitest';
import { upsertRecords } from '../cache/index.ts';
import { findObject, type ObjectDef } from '../sectors/index.ts';
import { insertTestConnection, useTestEnvironment } from '@pcg/testkit/testing';
import { cutMark, PAGE_BUDGET_CHARS, PAGE_CUT_NOTICE, ROW_CUT_NOTICE } from './query-budget.ts';
import { createQueryEngine, type QueryEngine } from './query-engine.ts';
import type { QueryResult } from './query-input.ts';
import { prettyText } from './pretty-text.ts';

// Issue 20, size-safe pages: a page ends at `limit` rows or at the character budget of the tool's text,
// whichever comes first; past the budget it ends early with has_more and a cursor, and says so.
const testEnv = useTestEnvironment();
let engine: QueryEngine;
const mail = findObject('mail.message') as ObjectDef;
const MESSAGES = 120;
/** A subject of 3,000 characters: 50 such rows are far past the budget, one is well inside it. */
const LONG = 'x'.repeat(3_000);
const textOf = (result: QueryResult) => JSON.stringify(result, null, 2);

beforeAll(async () => {
  engine = createQueryEngine({ db: testEnv.db, direct: testEnv.direct });
  const inbox = await insertTestConnection(testEnv.db, { sector: 'mail', provider: 'gmail' });
  await upsertRecords(testEnv.db, {
    object: 'mail.message',
    connectionId: inbox,
    source: 'gmail',
    records: Array.from({ length: MESSAGES }, (_, i) => ({
      source_id: `m${String(i).padStart(3, '0')}`,
      subject: `${i} ${LONG}`,
      from: `Sender ${i} <s${i}@example.com>`,
      received_at: new Date(Date.UTC(2026, 2, 1) + i * 60_000).toISOString(),
    })),
  });
  const other = await insertTestConnection(testEnv.db, { sector: 'mail', provider: 'imap' });
  await upsertRecords(testEnv.db, {
    object: 'mail.message',
    connectionId: other,
    source: 'imap',
    records: [{ source_id: 'huge', subject: 'y'.repeat(90_000), labels: Array.from({ length: 400 }, (_, i) => `label-${i}-${'z'.repeat(40)}`), received_at: '2030-01-01T00:00:00Z' }],
  });
});

describe('a page capped by size as well as rows', () => {
  it('ends a default page early at the budget, with has_more, a cursor and a notice naming select', async () => {
    const page = await engine.query(mail, { object: 'mail.message', where: [{ field: 'subject', op: 'starts_with', value: '1' }] });
    expect(textOf(page).length).toBeLessThanOrEqual(PAGE_BUDGET_CHARS);
    expect(page.row_count).toBeLessThan(50);
    expect(page).toMatchObject({ has_more: true, cut_for_size: true, notice: PAGE_CUT_NOTICE });
    expect(page.notice).toContain('select');
    expect(page.next_cursor).toEqual(expect.any(String));
  });

  it('continues exactly where a cut page stopped: every row once, in order, each page within the budget', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < 50; pages += 1) {
      const page = await engine.query(mail, { object: 'mail.message', where: [{ field: 'source_id', op: 'starts_with', value: 'm' }], order_by: [{ field: 'received_at', direction: 'asc' }], limit: 200, cursor });
      expect(textOf(page).length).toBeLessThanOrEqual(PAGE_BUDGET_CHARS);
      seen.push(...page.rows.map((row) => String(row.source_id)));
      if (!page.has_more) break;
      cursor = page.next_cursor;
    }
    expect(seen).toEqual(Array.from({ length: MESSAGES }, (_, i) => `m${String(i).padStart(3, '0')}`));
  });

  it('gives limit rows when select narrows them enough, without a notice', async () => {
    const page = await engine.query(mail, { object: 'mail.message', select: ['from', 'received_at'], limit: 120 });
    expect(page.row_count).toBe(120);
    expect(page.cut_for_size).toBeUndefined();
    expect(page.notice).toBeUndefined();
  });

  it('renders a page once: the tool text is that rendering, and the page is frozen so it cannot go stale', async () => {
    for (const input of [{ select: ['from', 'received_at'], limit: 120 }, {}]) {
      const page = await engine.query(mail, { object: 'mail.message', ...input });
      expect(Object.isFrozen(page)).toBe(true);
      expect(prettyText(page)).toBe(textOf(page));
      expect(() => Object.assign(page, { row_count: 0 })).toThrow(TypeError);
    }
  });

  it('cuts the longest fields of a row larger than the budget on its own, marks them, and still pages on', async () => {
    const page = await engine.query(mail, { object: 'mail.message', order_by: [{ field: 'received_at', direction: 'desc' }], limit: 3 });
    expect(textOf(page).length).toBeLessThanOrEqual(PAGE_BUDGET_CHARS);
    const [first] = page.rows;
    expect(first?.source_id).toBe('huge');
    expect(page.fields_cut).toEqual([{ id: first?.id, fields: expect.arrayContaining(['subject']) }]);
    expect(String(first?.subject)).toMatch(/^y+…\[cut: 90000 characters in all\]$/);
    expect(String(first?.subject).endsWith(cutMark(90_000))).toBe(true);
    expect(page.notice).toContain(ROW_CUT_NOTICE);
    expect(page).toMatchObject({ has_more: true, next_cursor: expect.any(String) });
    const next = await engine.query(mail, { object: 'mail.message', order_by: [{ field: 'received_at', direction: 'desc' }], limit: 3, cursor: page.next_cursor });
    expect(next.rows[0]?.source_id).toBe('m119');
  });
});
