import { describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { auditWriterConfigSchema } from '../src/config.ts';
import { startAuditWriter } from '../src/service.ts';

const testEnv = useTestEnvironment();

describe('audit-writer service', () => {
  it('starts against the database and Redis and closes its connections', async () => {
    const writer = await startAuditWriter(loadConfig(auditWriterConfigSchema, testEnv.env()), createCapturingLogger().log);
    expect(writer.address).toContain(testEnv.redisPrefix);
    await writer.close();
    await waitFor(() => (writer.redis.status === 'end' ? true : undefined), 2_000, 'redis to close');
  });

  it('fails to start, releasing what it opened, when Redis does not answer', async () => {
    const config = loadConfig(auditWriterConfigSchema, testEnv.env({ REDIS_URL: 'redis://127.0.0.1:1' }));
    await expect(startAuditWriter(config, createCapturingLogger().log)).rejects.toThrow(/Redis did not answer/);
  });
});
