import net from 'node:net';
import pg from 'pg';
import { Redis } from 'ioredis';

export type ProbeResult = { ok: true } | { ok: false; reachable: boolean; message: string };

const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENOTFOUND', 'ETIMEDOUT', 'EAI_AGAIN']);

function isUnreachable(error: unknown): boolean {
  const code = (error as { code?: string } | null)?.code;
  return (code !== undefined && UNREACHABLE_CODES.has(code)) || /timeout|ECONNREFUSED/i.test(String(error));
}

/** Connects to the server's `postgres` database with the URL's credentials. */
export async function probePostgres(databaseUrl: string, timeoutMs = 3_000): Promise<ProbeResult> {
  const url = new URL(databaseUrl);
  url.pathname = '/postgres';
  const client = new pg.Client({ connectionString: url.toString(), connectionTimeoutMillis: timeoutMs });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return { ok: true };
  } catch (error) {
    return { ok: false, reachable: !isUnreachable(error), message: (error as Error).message };
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function probeRedis(redisUrl: string, timeoutMs = 3_000): Promise<ProbeResult> {
  const client = new Redis(redisUrl, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.ping();
    return { ok: true };
  } catch (error) {
    return { ok: false, reachable: !isUnreachable(error), message: (error as Error).message };
  } finally {
    client.disconnect();
  }
}

/** Whether something already listens on 127.0.0.1:port. */
export async function portInUse(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** A free TCP port on the loopback interface. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}
