import { describe, expect, it } from 'vitest';
import { createCapturingLogger } from '@pcg/testkit/testing';

describe('logger redaction', () => {
  it.each([
    ['a top-level key', { key: 'pcg_live_SECRET' }],
    ['an authorization header', { req: { headers: { authorization: 'Bearer pcg_live_SECRET' } } }],
    ['a cookie header', { req: { headers: { cookie: 'sid=SECRET' } } }],
    ['a set-cookie header', { res: { headers: { 'set-cookie': 'sid=SECRET' } } }],
    ['a push secret header', { headers: { 'x-pci-webhook-secret': 'SECRET' } }],
    ['a nested token', { bridge: { grant: { token: 'SECRET' } } }],
    ['an apiKey', { provider: { apiKey: 'SECRET' } }],
    ['a refresh_token', { body: { refresh_token: 'SECRET' } }],
    ['a client secret', { client: { client_secret: 'SECRET' } }],
    ['a password', { password: 'SECRET' }],
  ])('never writes %s', (_label, fields) => {
    const { log, lines } = createCapturingLogger();
    log.info(fields, 'event');
    const [line] = lines();
    expect(line).toBeDefined();
    expect(line).not.toContain('SECRET');
    expect(line).toContain('[redacted]');
  });

  it('keeps harmless fields as they are', () => {
    const { log, lines } = createCapturingLogger();
    log.info({ agent: 'claude', sector: 'finance', keyboard: 'us' }, 'event');
    const entry = JSON.parse(lines()[0] ?? '{}') as Record<string, unknown>;
    expect(entry).toMatchObject({ agent: 'claude', sector: 'finance', keyboard: 'us', msg: 'event' });
  });
});
