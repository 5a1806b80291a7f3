import { randomBytes } from 'node:crypto';
import { loadConfig } from '@pcg/shared/config';
import { createCapturingLogger, type TestEnvironment } from '@pcg/testkit/testing';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import { auditWriterConfigSchema } from '../../services/audit-writer/src/config.ts';
import { startAuditWriter } from '../../services/audit-writer/src/service.ts';
import { startTestGateway } from '../../services/gateway/test/gateway-harness.ts';

/** The process that moves queued audit rows into Postgres, flushing every 100 ms. */
export async function startTestAuditWriter(testEnv: TestEnvironment) {
  return startAuditWriter(loadConfig(auditWriterConfigSchema, testEnv.env({ AUDIT_FLUSH_MS: '100' })), createCapturingLogger('audit-writer').log);
}

/** A Console and a gateway on port 0 over this file's database and Redis prefix, as the launcher runs them. */
export async function startConsoleAndGateway(testEnv: TestEnvironment, env: Record<string, string> = {}) {
  const config = loadConfig(consoleConfigSchema, testEnv.env({ REST_PORT: '0', CREDENTIALS_KEY: randomBytes(32).toString('base64'), ...env }));
  const console: RunningConsole = await startConsole(config, createCapturingLogger('console').log);
  const gateway = await startTestGateway(testEnv, env);
  return {
    console,
    gateway,
    async close() {
      await gateway.close();
      await console.close();
    },
  };
}
