import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sql } from '../db/index.ts';
import { createCapturingLogger, useTestEnvironment } from '@pcg/testkit/testing';
import { PG_VALUE_RULES } from '../validation/index.ts';
import { createHttpApp } from './create-http-app.ts';
import { registerJsonErrorHandler } from './error-handler.ts';

/**
 * The backstop of issue 12 item 6: an input that slips past every schema and makes Postgres raise a data
 * exception (SQLSTATE class 22) is a 400 naming the field where the request shows it, never a 500.
 * The routes here pass their input to SQL unchecked on purpose.
 */
const testEnv = useTestEnvironment();
const { log, lines } = createCapturingLogger('test');
const app = createHttpApp(log);
registerJsonErrorHandler(app);
const Value = z.object({ value: z.unknown() });
app.post('/as/:type', async (request) => {
  const { value } = request.body as { value: string };
  const type = (request.params as { type: string }).type;
  if (type === 'text') return testEnv.db.one(sql.type(Value)`SELECT ${value}::text AS value`);
  if (type === 'timestamptz') return testEnv.db.one(sql.type(Value)`SELECT ${value}::timestamptz AS value`);
  if (type === 'jsonb') return testEnv.db.one(sql.type(Value)`SELECT ${JSON.stringify(request.body)}::jsonb AS value`);
  return testEnv.db.one(sql.type(Value)`SELECT * FROM no_such_table`);
});
app.get('/filter', async (request) => testEnv.db.any(sql.type(Value)`SELECT ${(request.query as { q: string }).q}::text AS value`));

beforeAll(async () => app.ready());
afterAll(async () => app.close());

const post = (type: string, value: unknown) => app.inject({ method: 'POST', url: `/as/${type}`, payload: { value } });

describe('a Postgres data exception behind a route', () => {
  it('is a 400 naming the body field for a NUL in text (22021)', async () => {
    const answer = await post('text', 'a\u0000b');
    expect(answer.statusCode).toBe(400);
    expect(answer.json()).toEqual({ error: `invalid body: 'value' ${PG_VALUE_RULES.text}`, code: 'validation_failed' });
  });

  it('is a 400 naming the body field for a NUL (22P05) or a lone surrogate (22P02) in jsonb', async () => {
    for (const value of [['ok', 'a\u0000b'], ['ok', '\ud800']]) {
      const answer = await post('jsonb', value);
      expect(answer.statusCode).toBe(400);
      expect(answer.json()).toEqual({ error: `invalid body: 'value[1]' ${PG_VALUE_RULES.text}`, code: 'validation_failed' });
    }
  });

  it('is a 400 naming the query parameter', async () => {
    const answer = await app.inject({ method: 'GET', url: '/filter?q=%00' });
    expect(answer.statusCode).toBe(400);
    expect(answer.json()).toEqual({ error: `invalid query: 'q' ${PG_VALUE_RULES.text}`, code: 'validation_failed' });
  });

  it.each(['0000-01-01T00:00:00Z', '+010000-01-01T00:00:00.000Z', '2026-02-30', 'soon'])('is a 400 for the instant %s (22008, 22009, 22007)', async (value) => {
    const answer = await post('timestamptz', value);
    expect(answer.statusCode).toBe(400);
    expect(answer.json().code).toBe('validation_failed');
    expect(answer.json().error).toContain('years 0001-9999');
    expect(answer.body).not.toMatch(/SELECT|timestamptz|out of range/);
  });

  it('leaves every other database failure a 500 without internal text', async () => {
    const answer = await post('other', 1);
    expect(answer.statusCode).toBe(500);
    expect(answer.json()).toEqual({ error: 'internal error', code: 'internal' });
    expect(lines().join('\n')).toContain('data exception answered as a bad request');
  });
});
