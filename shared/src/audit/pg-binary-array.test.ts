import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sql } from '../db/index.ts';
import { useTestEnvironment } from '@pcg/testkit/testing';
import { encodePgArray } from './pg-binary-array.ts';

const testEnv = useTestEnvironment();

describe('encodePgArray', () => {
  it('round-trips text through Postgres, nulls, empty strings, quotes, backslashes and every plane included', async () => {
    const values = ['plain', '', null, 'a "quoted" \\ back\\slash, {brace}', 'tab\tnew\nline', 'caf\u00e9 \u20ac \ud83d\ude00', 'NULL'];
    const back = await testEnv.db.anyFirst(sql.type(z.object({ v: z.string().nullable() }))`
      SELECT v FROM unnest(${sql.binary(encodePgArray('text', values))}::text[]) WITH ORDINALITY AS u (v, n) ORDER BY n`);
    expect(back).toEqual(values);
  });

  it('round-trips int8 and int4, nulls included', async () => {
    const big = [1, 0, -5, Number.MAX_SAFE_INTEGER, null];
    const small = [2_147_483_647, -2_147_483_648, 0, null, 7];
    const back = await testEnv.db.many(sql.type(z.object({ b: z.number().nullable(), s: z.number().nullable() }))`
      SELECT b, s FROM unnest(${sql.binary(encodePgArray('int8', big))}::int8[], ${sql.binary(encodePgArray('int4', small))}::int4[])
        WITH ORDINALITY AS u (b, s, n) ORDER BY n`);
    expect(back.map((row) => row.b)).toEqual(big);
    expect(back.map((row) => row.s)).toEqual(small);
  });

  it('round-trips bytea, empty and null included', async () => {
    const values = [Buffer.from([0, 1, 255]), Buffer.alloc(0), null, Buffer.alloc(32, 7)];
    const back = await testEnv.db.anyFirst(sql.type(z.object({ v: z.string().nullable() }))`
      SELECT encode(v, 'hex') AS v FROM unnest(${sql.binary(encodePgArray('bytea', values))}::bytea[]) WITH ORDINALITY AS u (v, n) ORDER BY n`);
    expect(back).toEqual(values.map((value) => value?.toString('hex') ?? null));
  });

  it('refuses integers it cannot carry exactly', () => {
    expect(() => encodePgArray('int8', [2 ** 60])).toThrow(RangeError);
    expect(() => encodePgArray('int4', [2 ** 31])).toThrow(RangeError);
  });
});
