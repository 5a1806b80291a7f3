import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '@pcg/shared/config';
import { originPolicyConfig } from '../src/config.ts';

describe('MCP_ALLOWED_ORIGINS and MCP_ALLOWED_HOSTS', () => {
  it('default to none, and take comma-separated origins (as URL.origin writes them) and host names', () => {
    expect(loadConfig(originPolicyConfig, {})).toEqual({ MCP_ALLOWED_ORIGINS: [], MCP_ALLOWED_HOSTS: [] });
    const config = loadConfig(originPolicyConfig, { MCP_ALLOWED_ORIGINS: 'https://chatgpt.com, HTTPS://Claude.AI/ ,http://10.0.0.5:8080', MCP_ALLOWED_HOSTS: 'gw.lan, pi.local:8788' });
    expect(config.MCP_ALLOWED_ORIGINS).toEqual(['https://chatgpt.com', 'https://claude.ai', 'http://10.0.0.5:8080']);
    expect(config.MCP_ALLOWED_HOSTS).toEqual(['gw.lan', 'pi.local:8788']);
  });

  it.each([['MCP_ALLOWED_ORIGINS', 'https://chatgpt.com/connector'], ['MCP_ALLOWED_ORIGINS', 'chatgpt.com'], ['MCP_ALLOWED_ORIGINS', 'ftp://x.example'], ['MCP_ALLOWED_HOSTS', 'http://gw.lan']])(
    'refuses %s=%s at start, naming the value',
    (variable, value) => {
      const failure = (() => {
        try {
          loadConfig(originPolicyConfig, { [variable]: value });
        } catch (error) {
          return error;
        }
        return undefined;
      })();
      expect(failure).toBeInstanceOf(ConfigError);
      expect((failure as ConfigError).issues.join('\n')).toContain(value);
    },
  );
});
