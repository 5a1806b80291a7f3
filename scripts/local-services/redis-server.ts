import { spawnSync } from 'node:child_process';
import { startKeeper } from './keeper-client.ts';

export type RedisServerHandle = {
  url: string;
  /** The redis-server process (fault tests pause it with SIGSTOP). */
  pid: number;
  stop(): Promise<void>;
};

export function redisServerOnPath(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

/**
 * Runs `redis-server` bound to loopback under a keeper (see store-keeper.ts), so it stops with this
 * process however it ends. With `dataDir` it keeps an append-only file there (queues survive a
 * restart); without, it keeps nothing.
 */
export async function startRedisServer(options: {
  port: number;
  dataDir?: string;
  onLog?: (line: string) => void;
  /** Where the running server is published for other programs of the same data folder. */
  stateFile?: string;
  logFile?: string;
}): Promise<RedisServerHandle> {
  const kept = await startKeeper(
    { kind: 'redis', port: options.port, dataDir: options.dataDir, stateFile: options.stateFile, logFile: options.logFile },
    options.onLog,
  );
  return { url: kept.url, pid: kept.storePid, stop: () => kept.release() };
}
