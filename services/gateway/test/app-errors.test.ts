import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCapturingLogger, useTestEnvironment } from '@pcg/testkit/testing';
import { buildApp } from '../src/app.ts';

const testEnv = useTestEnvironment();
const logger = createCapturingLogger('gateway');
const app = buildApp({ log: logger.log });

beforeAll(async () => {
  // A route whose value reaches Postgres unchecked: what a schema that missed a case would let through.
  app.post('/unchecked', async (request) => {
    const { value, cast } = request.body as { value: string; cast: 'text' | 'date' };
    const type = cast === 'date' ? sql.fragment`date` : sql.fragment`text`;
    return testEnv.db.one(sql.type(z.object({ v: z.unknown() }))`select ${value}::${type} as v`);
  });
  await app.ready();
});
afterAll(async () => app.close());

describe("the agent port's error handler and Postgres data exceptions (SQLSTATE class 22)", () => {
  it.each([
    ['a NUL in text', { value: 'fin\u0000ance', cast: 'text' }, "invalid body: 'value'"],
    ['a date Postgres cannot hold', { value: '0000-01-01', cast: 'date' }, 'invalid request: a value is out of the range'],
    ['a date that does not parse', { value: 'not a date', cast: 'date' }, 'invalid request: a value is out of the range'],
  ])('answers %s with 400 -32602 naming what it can, never 500 -32603 or the database text', async (_case, body, detail) => {
    const answer = await app.inject({ method: 'POST', url: '/unchecked', payload: body });
    expect(answer.statusCode).toBe(400);
    const error = (answer.json() as { error: { code: number; message: string } }).error;
    expect(error.code).toBe(-32602);
    expect(error.message.startsWith(`Invalid params: ${detail}`)).toBe(true);
    expect(error.message).not.toMatch(/select|syntax|out of range for type|0x00/i);
    expect(logger.lines().some((line) => line.includes('data exception answered as a bad request'))).toBe(true);
  });
});
