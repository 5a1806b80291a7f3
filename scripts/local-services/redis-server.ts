import { spawn, spawnSync } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { probeRedis } from './probe.ts';

export type RedisServerHandle = {
  url: string;
  stop(): Promise<void>;
};

export function redisServerOnPath(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

/**
 * Runs `redis-server` as a child bound to loopback. With `dataDir` it keeps an append-only file there
 * (queues survive a restart); without, it keeps nothing.
 */
export async function startRedisServer(options: { port: number; dataDir?: string; onLog?: (line: string) => void }): Promise<RedisServerHandle> {
  const args = ['--port', String(options.port), '--bind', '127.0.0.1', '--protected-mode', 'yes', '--save', ''];
  if (options.dataDir) {
    await mkdir(options.dataDir, { recursive: true });
    args.push('--dir', options.dataDir, '--appendonly', 'yes');
  } else {
    args.push('--appendonly', 'no');
  }
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const forward = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) options.onLog?.(line);
  };
  child.stdout.on('data', forward);
  child.stderr.on('data', forward);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `redis://127.0.0.1:${options.port}`;

  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with status ${child.exitCode}`);
    if ((await probeRedis(url, 500)).ok) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error('redis-server did not answer within 10 s');
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    url,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
