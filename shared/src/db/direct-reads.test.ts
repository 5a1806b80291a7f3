import { sql } from 'slonik';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { useTestEnvironment } from '@pcg/testkit/testing';
import { createDatabase } from './create-database.ts';
import type { DirectPool } from './direct-reads.ts';
import { TYPE_PARSERS } from './type-parsers.ts';

const testEnv = useTestEnvironment();

const readThrough = (direct: DirectPool, query: { sql: string; values: readonly unknown[] }) => direct.read({ sql: query.sql, values: query.values });

describe("a database's direct reads (the query engine's way to its rows)", () => {
  it("names each parsed type by the oids Postgres gives it and its array type", async () => {
    const types = await testEnv.db.any(sql.type(z.object({ typname: z.string(), oid: z.number(), typarray: z.number() }))`
      SELECT typname, oid::int AS oid, typarray::int AS typarray FROM pg_type WHERE typname = ANY(${sql.array(TYPE_PARSERS.map((parser) => parser.name), 'text')})`);
    expect(Object.fromEntries(types.map((type) => [type.typname, [type.oid, type.typarray]]))).toEqual(
      Object.fromEntries(TYPE_PARSERS.map((parser) => [parser.name, [parser.oid, parser.arrayOid]])),
    );
  });

  it('reads every column type as the slonik pool does, arrays (nested, with nulls) and values outside Date included', async () => {
    const query = sql.fragment`
      SELECT 9007199254740991::int8 AS big, 12.50::numeric AS money, 'infinity'::timestamptz AS forever,
             '2026-03-01 07:00:00.123456+00'::timestamptz AS instant, '2026-03-01 07:00:00'::timestamp AS local,
             '2026-03-01'::date AS day, ARRAY[1, NULL, 3]::int8[] AS bigs, ARRAY[['1.5', NULL], ['2', '3.25']]::numeric[] AS grid,
             ARRAY['2026-03-01 07:00:00+00', NULL]::timestamptz[] AS instants, ARRAY['2026-03-01']::date[] AS days,
             7::int4 AS small, true AS yes, '{"a": [1]}'::jsonb AS doc, 'text' AS words, NULL::int8 AS nothing, ${'bound'}::text AS bound`;
    const [read] = await readThrough(testEnv.direct, query);
    expect(read).toEqual({
      big: 9007199254740991,
      money: '12.50',
      forever: 'infinity',
      instant: '2026-03-01T07:00:00.123Z',
      local: '2026-03-01T07:00:00.000Z',
      day: '2026-03-01',
      bigs: [1, null, 3],
      grid: [['1.5', null], ['2', '3.25']],
      instants: ['2026-03-01T07:00:00.000Z', null],
      days: ['2026-03-01'],
      small: 7,
      yes: true,
      doc: { a: [1] },
      words: 'text',
      nothing: null,
      bound: 'bound',
    });
    // The same statement through slonik (its parsers chosen by type name) reads the same row, but for the
    // NULL inside the int8 array: slonik hands array elements to the parser NULL included (it reads 0).
    const { bigs: _bigs, ...rest } = read as Record<string, unknown>;
    expect(await testEnv.db.one(sql.unsafe`${query}`)).toEqual({ ...rest, bigs: [1, 0, 3] });
  });

  it("refuses an int8 past 2^53 as slonik's pool does, instead of rounding it", async () => {
    await expect(readThrough(testEnv.direct, sql.fragment`SELECT 9007199254740993::int8 AS big`)).rejects.toThrow(/outside the safe integer range/);
  });

  it('fails a value Postgres cannot use with its SQLSTATE (data exceptions are told apart from failures)', async () => {
    await expect(readThrough(testEnv.direct, sql.fragment`SELECT ${'not a number'}::int AS n`)).rejects.toMatchObject({ code: '22P02' });
  });

  it("keeps the database's statement timeout", async () => {
    const database = await createDatabase(testEnv.databaseUrl, { maximumPoolSize: 1, statementTimeout: 100 });
    try {
      await expect(readThrough(database.direct, sql.fragment`SELECT pg_sleep(2)`)).rejects.toMatchObject({ code: '57014' });
      expect(await readThrough(database.direct, sql.fragment`SELECT 1 AS one`)).toEqual([{ one: 1 }]);
    } finally {
      await database.end();
    }
  });

  it('is ended with the database: ending it ends both pools, and ending it again is no error', async () => {
    const one = sql.type(z.object({ one: z.number() }))`SELECT 1 AS one`;
    const database = await createDatabase(testEnv.databaseUrl, { maximumPoolSize: 1 });
    expect(await database.pool.oneFirst(one)).toBe(1);
    expect(await readThrough(database.direct, sql.fragment`SELECT 1 AS one`)).toEqual([{ one: 1 }]);
    await database.end();
    await expect(database.pool.oneFirst(one)).rejects.toThrow();
    await expect(readThrough(database.direct, sql.fragment`SELECT 1 AS one`)).rejects.toThrow();
    await expect(database.direct.connect()).rejects.toThrow();
    await database.end();
  });
});
