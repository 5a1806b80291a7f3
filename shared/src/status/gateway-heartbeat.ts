import { z } from 'zod';
import type { Redis } from '../redis/index.ts';

/** Under REDIS_PREFIX (the commands client adds it). */
export const HEARTBEAT_KEY = 'gateway:heartbeat';
export const HEARTBEAT_EVERY_MS = 5_000;
/** A heartbeat older than this means no gateway is serving MCP. */
export const HEARTBEAT_TTL_MS = 15_000;

export const HeartbeatSchema = z.object({ address: z.string(), sessions: z.number().int(), at: z.string() });
export type Heartbeat = z.infer<typeof HeartbeatSchema>;

export const MCP_NOT_SERVED =
  'The gateway is not serving MCP: set MCP_HTTP_PORT (default 8788) and restart the service.';

/**
 * The gateway's sign of life for the Console's Connect band (design 4.1): a key refreshed every few
 * seconds that expires on its own when the gateway stops or dies.
 */
export function startHeartbeat(redis: Redis, beat: () => Omit<Heartbeat, 'at'>): { stop(): Promise<void> } {
  const write = () =>
    redis.set(HEARTBEAT_KEY, JSON.stringify({ ...beat(), at: new Date().toISOString() }), 'PX', HEARTBEAT_TTL_MS).catch(() => undefined);
  void write();
  const timer = setInterval(write, HEARTBEAT_EVERY_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await redis.del(HEARTBEAT_KEY).catch(() => undefined);
    },
  };
}

export async function readHeartbeat(redis: Redis): Promise<Heartbeat | null> {
  const raw = await redis.get(HEARTBEAT_KEY);
  if (!raw) return null;
  try {
    const parsed = HeartbeatSchema.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
