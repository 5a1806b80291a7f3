import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestEnvironment } from '@pcg/testkit/testing';
import { api, collectingAudit, startTestConsole, type TestConsole } from './helpers.ts';

const testEnv = useTestEnvironment();
const audit = collectingAudit();
let consoleApp: TestConsole;
const SECRET_URL = 'https://ntfy.example/pcg-secret-topic-9f2';

beforeAll(async () => {
  consoleApp = await startTestConsole(testEnv, audit.recorder);
});
afterAll(async () => {
  await consoleApp.close();
});

describe('the alert destination in the Console (issue 41)', () => {
  it('is write-only: saving answers whether one is set and its kind, never the URL; the act’s audit row says only that it was set', async () => {
    expect((await api(consoleApp.address, 'GET', '/api/alerts/destination')).json).toEqual({ set: false, kind: null, savedAt: null });
    const saved = await api(consoleApp.address, 'PUT', '/api/alerts/destination', { url: SECRET_URL });
    expect(saved.status).toBe(200);
    expect(saved.json).toMatchObject({ set: true, kind: 'ntfy' });
    const read = await api(consoleApp.address, 'GET', '/api/alerts/destination');
    expect(read.json).toMatchObject({ set: true, kind: 'ntfy' });
    expect(saved.text + read.text).not.toContain('pcg-secret-topic');
    expect(audit.events).toEqual([expect.objectContaining({ agentId: 'operator', tool: 'set_alert_destination', decision: 'allow', args: { set: true, kind: 'ntfy' } })]);
    expect(JSON.stringify(audit.events)).not.toContain('pcg-secret-topic');
  });

  it.each([
    ['not a URL', 'not a url'],
    ['a path that is neither an ntfy topic nor /notify/<key>', 'https://ntfy.example/a/b/c'],
    ['a cloud metadata address (the outbound policy)', 'http://169.254.169.254/topic'],
  ])('refuses %s with 400 and keeps the one saved', async (_what, url) => {
    const refused = await api(consoleApp.address, 'PUT', '/api/alerts/destination', { url });
    expect(refused.status).toBe(400);
    expect((await api(consoleApp.address, 'GET', '/api/alerts/destination')).json).toMatchObject({ set: true, kind: 'ntfy' });
  });

  it('removing it turns notifications off and leaves a row saying it is not set', async () => {
    audit.events.length = 0;
    expect((await api(consoleApp.address, 'DELETE', '/api/alerts/destination')).status).toBe(204);
    expect((await api(consoleApp.address, 'GET', '/api/alerts/destination')).json).toEqual({ set: false, kind: null, savedAt: null });
    expect(audit.events).toEqual([expect.objectContaining({ tool: 'set_alert_destination', args: { set: false } })]);
  });
});
