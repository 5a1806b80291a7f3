import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SourceRateLimitedError } from '../../src/connectors/kit/source-errors.ts';
import { CheckBudgetSpentError, createCheckProbe } from '../../src/check/check-probe.ts';
import { clockStep, rateLimitStep } from '../../src/check/check-steps.ts';

// The connection check's budget and what it reads from every answer (issue 32): at most 10 requests,
// the clock skew from the Date header, the rate-limit headers seen.
let server: Server;
let url = '';
/** What the test source puts in its Date header; undefined: the server's own. */
let dateHeader: string | undefined;

beforeAll(async () => {
  server = createServer((_req, res) => {
    if (dateHeader !== undefined) res.setHeader('date', dateHeader);
    res.setHeader('x-ratelimit-remaining', '41');
    res.end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('the check probe', () => {
  it('sends at most 10 requests: the eleventh is refused before it leaves', async () => {
    const probe = createCheckProbe();
    for (let sent = 0; sent < 10; sent += 1) expect((await probe.fetch(url)).status).toBe(200);
    await expect(probe.fetch(url)).rejects.toBeInstanceOf(CheckBudgetSpentError);
    expect(probe.requests()).toBe(10);
    expect(probe.spent()).toBe(true);
  });

  it('reads the clock skew from the Date header and fails the clock step past five minutes, with the fix', async () => {
    const now = Date.parse('2026-11-27T12:00:00Z');
    dateHeader = new Date(now - 10 * 60_000).toUTCString();
    const behind = createCheckProbe({ now: () => now });
    await behind.fetch(url);
    expect(behind.skewMs()).toBe(600_000);
    expect(clockStep(behind.skewMs(), 'the hub')).toMatchObject({ step: 'clock', passed: false, message: expect.stringContaining("clock is 600 s ahead of the hub's: set the machine's clock") });

    dateHeader = new Date(now - 2_000).toUTCString();
    const close = createCheckProbe({ now: () => now });
    await close.fetch(url);
    expect(clockStep(close.skewMs(), 'the hub')).toMatchObject({ step: 'clock', passed: true });
    dateHeader = undefined;
  });

  it('keeps the rate-limit headers seen, and fails the rate-limit step when a read was rate limited', async () => {
    const probe = createCheckProbe();
    await probe.fetch(url);
    expect(probe.rateLimits().get('x-ratelimit-remaining')).toBe('41');
    expect(rateLimitStep(probe.rateLimits(), undefined, 'the hub')).toMatchObject({ passed: true, message: expect.stringContaining('x-ratelimit-remaining: 41') });
    const limited = new SourceRateLimitedError('the hub is rate limiting (HTTP 429); next try in 30 s', 30_000);
    expect(rateLimitStep(probe.rateLimits(), limited, 'the hub')).toMatchObject({ passed: false, message: expect.stringContaining('wait that long') });
  });
});
