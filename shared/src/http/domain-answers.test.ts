import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCapturingLogger } from '@pcg/testkit/testing';
import { ConflictError, DomainError, ForbiddenError, NotFoundError, UnauthorizedError, UpstreamError, ValidationError } from '../errors/index.ts';
import { createHttpApp } from './create-http-app.ts';
import { registerJsonErrorHandler } from './error-handler.ts';
import { HTTP_STATUS_OF_KIND } from './errors.ts';

/**
 * The Console port's answer to each kind of domain error: the status the spec and the design give it and
 * the `{ error, code }` body with the error's own words. The statuses are written out here, not read from
 * the map, so a changed map fails.
 */
const CASES: Array<{ thrown: () => DomainError; status: number; body: { error: string; code: string } }> = [
  { thrown: () => new ValidationError("unknown object 'finance.nothing'"), status: 400, body: { error: "unknown object 'finance.nothing'", code: 'validation_failed' } },
  { thrown: () => new UnauthorizedError(), status: 401, body: { error: 'unauthorized', code: 'unauthorized' } },
  { thrown: () => new ForbiddenError('access denied: expired'), status: 403, body: { error: 'access denied: expired', code: 'forbidden' } },
  { thrown: () => new NotFoundError(), status: 404, body: { error: 'not found', code: 'not_found' } },
  { thrown: () => new ConflictError("no active connection for sector 'home'"), status: 409, body: { error: "no active connection for sector 'home'", code: 'conflict' } },
  { thrown: () => new DomainError('unprocessable', 'credential_refused', 'the source refused the token'), status: 422, body: { error: 'the source refused the token', code: 'credential_refused' } },
  { thrown: () => new UpstreamError(), status: 502, body: { error: 'the source did not answer', code: 'upstream_failed' } },
  { thrown: () => new DomainError('unavailable', 'queue_unavailable', 'the job queue is not reachable'), status: 503, body: { error: 'the job queue is not reachable', code: 'queue_unavailable' } },
  { thrown: () => new DomainError('timeout', 'live_timeout', 'the source did not answer within 20 s'), status: 504, body: { error: 'the source did not answer within 20 s', code: 'live_timeout' } },
];

const { log } = createCapturingLogger('test');
const app = createHttpApp(log);
registerJsonErrorHandler(app);
app.get('/throws/:case', async (request) => {
  throw (CASES[Number((request.params as { case: string }).case)] as (typeof CASES)[number]).thrown();
});
app.get('/fails', async () => {
  throw new Error('SELECT secret FROM somewhere');
});

beforeAll(async () => app.ready());
afterAll(async () => app.close());

describe('a domain error at the Console port', () => {
  it.each(CASES.map((entry, index) => ({ ...entry, index })))('answers $status for $body.code', async ({ index, status, body }) => {
    const answer = await app.inject({ method: 'GET', url: `/throws/${index}` });
    expect(answer.statusCode).toBe(status);
    expect(answer.json()).toEqual(body);
  });

  it('has an answer for every kind there is', () => {
    expect(new Set(CASES.map((entry) => entry.thrown().kind))).toEqual(new Set(Object.keys(HTTP_STATUS_OF_KIND)));
  });

  it('answers any other failure 500 without its text', async () => {
    const answer = await app.inject({ method: 'GET', url: '/fails' });
    expect(answer.statusCode).toBe(500);
    expect(answer.json()).toEqual({ error: 'internal error', code: 'internal' });
  });
});
