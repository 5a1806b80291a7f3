import { sql } from 'slonik';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { useTestEnvironment } from '@pcg/testkit/testing';

const testEnv = useTestEnvironment();

describe('the pool reads every timestamp Postgres can store', () => {
  it('serves stored instants outside JS Date\'s range as Postgres\'s text instead of failing the read', async () => {
    const row = await testEnv.db.one(sql.type(z.object({ a: z.string(), b: z.string(), c: z.string(), d: z.string(), e: z.string(), f: z.string() }))`
      SELECT 'infinity'::timestamptz AS a, '-infinity'::timestamptz AS b, '0001-01-01 00:00:00+00 BC'::timestamptz AS c,
             '294276-12-31 23:59:59+00'::timestamptz AS d, '2026-03-01 07:00:00.123456+00'::timestamptz AS e, 'infinity'::timestamp AS f`);
    expect(row).toEqual({ a: 'infinity', b: '-infinity', c: '0001-01-01 00:00:00+00 BC', d: '294276-12-31 23:59:59+00', e: '2026-03-01T07:00:00.123Z', f: 'infinity' });
  });
});
