import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { createCapturingLogger, useTestEnvironment } from '@pcg/testkit/testing';
import { consoleConfigSchema } from '../src/config.ts';
import { startConsole, type RunningConsole } from '../src/service.ts';

const testEnv = useTestEnvironment();
let consoleService: RunningConsole;

beforeAll(async () => {
  const config = loadConfig(consoleConfigSchema, testEnv.env({ REST_PORT: '0', CREDENTIALS_KEY: randomBytes(32).toString('base64') }));
  consoleService = await startConsole(config, createCapturingLogger('console').log);
});
afterAll(async () => consoleService.close());

describe('console', () => {
  it('answers GET /healthz with 200', async () => {
    const response = await fetch(`${consoleService.address}/healthz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
  });

  it('answers an unknown route with a JSON 404', async () => {
    const response = await fetch(`${consoleService.address}/api/nothing-here`);
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ error: 'not found' });
  });

  it('listens on loopback by default', () => {
    expect(new URL(consoleService.address).hostname).toBe('127.0.0.1');
  });
});
