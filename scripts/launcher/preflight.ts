import { readFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { ensureWritableDataDir, LaunchError } from '../local-services/index.ts';

type Ports = { BIND_HOST: string; REST_PORT: number; MCP_HTTP_PORT: number; CREDENTIALS_KEY?: string | undefined };

/** Whether `port` can be listened on at `host`; the error code when not. */
async function tryListen(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(undefined)));
  });
}

async function checkPort(host: string, port: number, variable: string, what: string): Promise<void> {
  if (port === 0) return;
  const code = await tryListen(host, port);
  if (code === undefined) return;
  const reasons: Record<string, string> = {
    EADDRINUSE: `port ${port} (${variable}), where ${what} would listen, is already in use on ${host}: stop what uses it, or set ${variable} to a free port`,
    EACCES: `this user may not listen on port ${port} (${variable}): ports below 1024 need privileges; set ${variable} above 1023`,
    EADDRNOTAVAIL: `BIND_HOST=${host} is not an address of this machine: set BIND_HOST to one (127.0.0.1 for this machine only)`,
  };
  throw new LaunchError(reasons[code] ?? `${what} cannot listen on ${host}:${port} (${code}): set ${variable} to another port`);
}

/**
 * What a restart of a service could never fix, checked before anything starts: one message naming the
 * cause and the fix, instead of a service restarting forever.
 */
export async function preflight(config: Ports, dataDir: string): Promise<void> {
  if (config.REST_PORT === config.MCP_HTTP_PORT && config.REST_PORT !== 0) {
    throw new LaunchError(
      `REST_PORT and MCP_HTTP_PORT are both ${config.REST_PORT}: the Console and the agent port need a port each; set one of them to another port`,
    );
  }
  await checkPort(config.BIND_HOST, config.REST_PORT, 'REST_PORT', 'the Console');
  await checkPort(config.BIND_HOST, config.MCP_HTTP_PORT, 'MCP_HTTP_PORT', 'the agent port');
  await ensureWritableDataDir(dataDir);
  if (config.CREDENTIALS_KEY) return;
  const keyFile = path.join(dataDir, 'credentials.key');
  try {
    await readFile(keyFile);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return;
    throw new LaunchError(
      `the credentials key ${keyFile} cannot be read (${code}): give it back to this user (chown and chmod 600 the file), or set CREDENTIALS_KEY`,
    );
  }
}
