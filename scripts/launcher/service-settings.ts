import type { z } from 'zod';
import { configIssues } from '@pcg/shared/config';
import { auditWriterConfigSchema } from '../../services/audit-writer/src/config.ts';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { gatewayConfigSchema } from '../../services/gateway/src/config.ts';
import { syncWorkerConfigSchema } from '../../services/sync-worker/src/config.ts';

const SERVICE_SCHEMAS: ReadonlyArray<readonly [string, z.ZodType]> = [
  ['console', consoleConfigSchema],
  ['gateway', gatewayConfigSchema],
  ['audit-writer', auditWriterConfigSchema],
  ['sync-worker', syncWorkerConfigSchema],
];

/**
 * Every problem any of the four services would find in the environment it is given, checked before any of
 * them starts, so a setting only one service reads (SOURCE_TIMEOUT_MS) stops the launch at once instead of
 * that service crashing five times after the others said ready. A problem several services share is said
 * once, with the services that read the setting.
 */
export function serviceSettingsIssues(env: Record<string, string | undefined>): string[] {
  const readers = new Map<string, string[]>();
  for (const [service, schema] of SERVICE_SCHEMAS) {
    for (const issue of configIssues(schema, env)) readers.set(issue, [...(readers.get(issue) ?? []), service]);
  }
  return [...readers].map(([issue, services]) => `${issue} (read by ${services.join(', ')})`);
}
