import { runService } from '@pcg/shared/lifecycle';
import { auditWriterConfigSchema } from './config.ts';
import { startAuditWriter } from './service.ts';

await runService({
  name: 'audit-writer',
  configSchema: auditWriterConfigSchema,
  start: startAuditWriter,
  readyFields: (writer) => ({ address: writer.address }),
});
