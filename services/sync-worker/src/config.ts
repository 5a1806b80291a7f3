import { agentPortConfig, consolePortConfig, dbConfig, logConfig, metricsConfig, redisConfig } from '@pcg/shared/config';
import { credentialsConfig } from '@pcg/shared/crypto';
import { providerOriginsConfig } from '@pcg/shared/providers';
import { z } from 'zod';
import { ICloudResolveSchema } from './connectors/icloud/icloud-local-override.ts';

const ms = (fallback: number, min = 1) => z.coerce.number().int().min(min).default(fallback);

export const syncWorkerConfigSchema = logConfig.extend({
  ...dbConfig.shape,
  ...redisConfig.shape,
  ...credentialsConfig.shape,
  ...metricsConfig.shape,
  ...providerOriginsConfig.shape,
  /** The Console's port: the outbound policy refuses it on this machine's addresses as a source address (issue 32). */
  REST_PORT: consolePortConfig.shape.REST_PORT,
  /** The agent port: refused like the Console's. */
  MCP_HTTP_PORT: agentPortConfig.shape.MCP_HTTP_PORT,
  /** The calendar sync window (spec 6): days of past occurrences kept; default 90. */
  CALENDAR_PAST_DAYS: z.coerce.number().int().min(0).max(3650).default(90),
  /** The calendar sync window: days of future occurrences kept; default 365. */
  CALENDAR_FUTURE_DAYS: z.coerce.number().int().min(1).max(3650).default(365),
  /** Timeout of one request to a source, in milliseconds; default 30000. */
  SOURCE_TIMEOUT_MS: ms(30_000, 100),
  /** Syncs run at once; default 4. */
  SYNC_CONCURRENCY: ms(4),
  /** Live reads and actions served at once; default 8. */
  LIVE_CONCURRENCY: ms(8),
  /** First retry delay of a failed sync, doubled each attempt (with jitter, capped at 30 min); default 30000. */
  SYNC_BACKOFF_MS: ms(30_000, 10),
  /**
   * How long a job's lock lives without renewal, and how often stalled jobs are looked for; default 30000.
   * A job whose worker died is taken up again after about this long.
   */
  SYNC_LOCK_MS: ms(30_000, 500),
  /**
   * How often the sync schedulers (in Redis) are reconciled with the connections table (in Postgres),
   * besides every reconnect to Redis; default 60000.
   */
  SCHEDULE_RECONCILE_MS: ms(60_000, 100),
  /**
   * Lets bank-link bridge addresses (setup-token claims, access URLs) use a loopback host over http: for
   * the local test bridge of the tests and the demo only; default false (https to a real host only).
   */
  SIMPLEFIN_ALLOW_LOOPBACK: z.enum(['true', 'false']).default('false').transform((value) => value === 'true'),
  /**
   * iCloud names reached on this machine instead (`caldav.icloud.com=127.0.0.1:18127,…`; the demo's local
   * Radicale and Dovecot): loopback addresses only, names only under `*.icloud.com` and `imap.mail.me.com`.
   * The guard and the IMAP pin still check each name and TLS is still verified for it; default none.
   */
  ICLOUD_RESOLVE: ICloudResolveSchema,
  /** A PEM file of CAs trusted for iCloud connections besides the system's (read at each connection); default none. */
  ICLOUD_EXTRA_CA_FILE: z.string().trim().min(1).optional(),
  /** On shutdown, how long jobs in hand may finish before they are put back in the queue; default 20000. */
  SHUTDOWN_GRACE_MS: ms(20_000, 0),
});

export type SyncWorkerConfig = z.output<typeof syncWorkerConfigSchema>;
