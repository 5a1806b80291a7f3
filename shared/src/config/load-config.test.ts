import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { credentialsConfig } from '../crypto/credentials-key.ts';
import { agentPortConfig, consolePortConfig, dbConfig, redisConfig } from './config-schema.ts';
import { ConfigError, configIssues, loadConfig } from './load-config.ts';

const schema = consolePortConfig.extend({ ...agentPortConfig.shape, ...dbConfig.shape, ...redisConfig.shape });

function problems(env: Record<string, string>): readonly string[] {
  try {
    loadConfig(schema, env);
  } catch (error) {
    if (error instanceof ConfigError) return error.issues;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('applies the documented defaults when nothing is set', () => {
    const config = loadConfig(schema, {});
    expect(config.REST_PORT).toBe(8787);
    expect(config.MCP_HTTP_PORT).toBe(8788);
    expect(config.REDIS_PREFIX).toBe('pcg:');
    expect(config.SERVICE_NAME).toBe('personal-context-gateway');
    expect(config.REST_ALLOWED_HOSTS).toEqual([]);
    expect(config.DATABASE_URL).toMatch(/\/pcg$/);
  });

  it('names REST_PORT, the value given and what is allowed when it is not a number', () => {
    const [issue, ...rest] = problems({ REST_PORT: 'abc' });
    expect(rest).toEqual([]);
    expect(issue).toContain('REST_PORT');
    expect(issue).toContain('"abc"');
    expect(issue).toContain('port number');
  });

  it.each([
    ['REST_PORT', '70000', 'between 0 and 65535'],
    ['MCP_HTTP_PORT', '80.5', 'whole number'],
    ['DATABASE_URL', 'mysql://x/y', 'postgres://'],
    ['REDIS_URL', 'not a url', 'redis://'],
    ['REDIS_PREFIX', 'has spaces', 'letters, digits'],
  ])('refuses %s=%s naming the variable', (name, value, allowed) => {
    const issues = problems({ [name]: value });
    expect(issues).toHaveLength(1);
    expect(issues[0]).toContain(name);
    expect(issues[0]).toContain(allowed);
  });

  it('reports every bad variable at once', () => {
    const issues = problems({ REST_PORT: 'abc', MCP_HTTP_PORT: '-1' });
    expect(issues.map((issue) => issue.split(/[=:]/)[0])).toEqual(['REST_PORT', 'MCP_HTTP_PORT']);
  });

  it('never prints a secret setting\'s value or a URL\'s password, and still names the variable and the fix', () => {
    const secrets = credentialsConfig.extend({
      ...dbConfig.shape,
      PLAID_SECRET: z.string().min(30, 'must be the 30-character secret from the dashboard'),
      HUB_TOKEN: z.string().startsWith('ey', 'must be a long-lived access token'),
      BRIDGE_SIGNING_KEY: z.string().length(64, 'must be 64 hex characters'),
    });
    const given = {
      CREDENTIALS_KEY: 'bm90LXRoaXJ0eS10d28tYnl0ZXM=',
      DATABASE_URL: 'mysql://pcg:hunter2-pass@db.lan/pcg',
      PLAID_SECRET: 'short-plaid-secret',
      HUB_TOKEN: 'plain-hub-token',
      BRIDGE_SIGNING_KEY: 'abc123-signing',
    };
    const issues = configIssues(secrets, given);
    expect(issues.map((issue) => issue.split(/[=:]/)[0]).sort()).toEqual(['BRIDGE_SIGNING_KEY', 'CREDENTIALS_KEY', 'DATABASE_URL', 'HUB_TOKEN', 'PLAID_SECRET']);
    for (const value of [...Object.values(given), 'hunter2']) expect(issues.join('\n')).not.toContain(value);
    expect(issues).toContain('DATABASE_URL="mysql://pcg:***@db.lan/pcg": must be a postgres:// or postgresql:// URL');
    expect(issues.find((issue) => issue.startsWith('CREDENTIALS_KEY'))).toContain('openssl rand -base64 32');
  });

  it('reads comma lists, dropping blanks, and treats an empty variable as unset', () => {
    const config = loadConfig(schema, { REST_ALLOWED_HOSTS: ' gw.lan , ,pi.local', REST_PORT: '' });
    expect(config.REST_ALLOWED_HOSTS).toEqual(['gw.lan', 'pi.local']);
    expect(config.REST_PORT).toBe(8787);
  });

  it('freezes the result', () => {
    expect(Object.isFrozen(loadConfig(schema, {}))).toBe(true);
  });
});
