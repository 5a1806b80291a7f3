import { z } from 'zod';

const port = z.coerce
  .number({ error: 'must be a port number' })
  .int({ error: 'must be a whole number' })
  .min(0, { error: 'must be between 0 and 65535' })
  .max(65535, { error: 'must be between 0 and 65535' });

const positiveInt = z.coerce
  .number({ error: 'must be a number' })
  .int({ error: 'must be a whole number' })
  .positive({ error: 'must be greater than 0' });

/** A comma-separated list; empty entries are dropped. */
const commaList = z
  .string()
  .default('')
  .transform((value) =>
    value
      .split(',')
      .map((item) => item.trim())
      .filter((item) => item.length > 0),
  );

const postgresUrl = z.url({ protocol: /^postgres(ql)?$/, error: 'must be a postgres:// or postgresql:// URL' });
const redisUrl = z.url({ protocol: /^rediss?$/, error: 'must be a redis:// or rediss:// URL' });

/** The local Postgres the launcher and the services use when `DATABASE_URL` is not set. */
export const DEFAULT_DATABASE_URL = 'postgres://postgres:postgres@127.0.0.1:5432/pcg';
/** The local Redis used when `REDIS_URL` is not set. */
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

export const logConfig = z.object({
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** `pretty` (local time, one line an event) or `json` (pino lines); unset: pretty on a terminal, else json. */
  LOG_FORMAT: z.enum(['pretty', 'json']).optional(),
});

export const dbConfig = z.object({
  DATABASE_URL: postgresUrl.default(DEFAULT_DATABASE_URL),
});

export const redisConfig = z.object({
  REDIS_URL: redisUrl.default(DEFAULT_REDIS_URL),
  REDIS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9:_-]{1,64}$/, { error: 'must be 1 to 64 letters, digits, ":", "_" or "-"' })
    .default('pcg:'),
});

export const bindConfig = z.object({
  BIND_HOST: z.string().min(1).default('127.0.0.1'),
});

export const consolePortConfig = z.object({
  /** Console port; default 8787. */
  REST_PORT: port.default(8787),
  /** Extra Host names the Console accepts besides localhost, 127.0.0.1 and ::1. */
  REST_ALLOWED_HOSTS: commaList,
});

export const agentPortConfig = z.object({
  /** Agent port serving /mcp; default 8788. */
  MCP_HTTP_PORT: port.default(8788),
  SERVICE_NAME: z.string().min(1).max(200).default('personal-context-gateway'),
  /** Proxy addresses whose X-Forwarded-For is believed by the bridge rate limiter. */
  MCP_TRUSTED_PROXIES: commaList,
  /**
   * An MCP session with no request for this long is closed; default 8 hours. Generous on purpose:
   * some hosted clients never re-initialize on their own after their session is gone.
   */
  MCP_SESSION_IDLE_MS: positiveInt.default(8 * 60 * 60 * 1000),
});

export const auditConfig = z.object({
  /** Audit flush interval in milliseconds; default 1000. */
  AUDIT_FLUSH_MS: positiveInt.default(1000),
  /** Audit rows queued in Redis before new rows are dropped; default 100000. */
  AUDIT_QUEUE_CAPACITY: positiveInt.default(100_000),
  /** Audit rows each producer holds in memory while Redis is unreachable, before new rows are dropped; default 50000. */
  AUDIT_BUFFER_CAPACITY: positiveInt.default(50_000),
});

export const dataDirConfig = z.object({
  /** Where the launcher keeps embedded Postgres, Redis and the generated credentials key; default ./data. */
  DATA_DIR: z.string().min(1).default('data'),
});

export const metricsConfig = z.object({
  /** How often a process publishes its counters for the Console's `/metrics`, in milliseconds; default 5000. */
  METRICS_PUBLISH_MS: positiveInt.default(5_000),
});
