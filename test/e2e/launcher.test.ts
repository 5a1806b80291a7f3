import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { mkdir, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { EXIT_NEEDS_OPERATOR } from '@pcg/shared/lifecycle';
import { waitFor } from '@pcg/testkit/testing';
import { freePort, withDatabase } from '../../scripts/local-services/index.ts';
import { guardedChildEnv } from '../support/no-internet-guard.ts';

const root = path.resolve(import.meta.dirname, '../..');
const database = `pcg_launch_${process.pid}_${Date.now().toString(36)}`;
let dataDir: string;

type Launched = { child: ChildProcess; output: () => string; exited: Promise<number | null> };

function launch(env: Record<string, string>): Launched {
  let output = '';
  const child = spawn(process.execPath, [path.join(root, 'scripts/launcher.ts')], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', LOG_LEVEL: 'info', ...guardedChildEnv(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

function childPids(parentPid: number): number[] {
  const result = spawnSync('pgrep', ['-P', String(parentPid)], { encoding: 'utf8' });
  return result.stdout.split('\n').filter(Boolean).map(Number);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function answers(url: string): Promise<Response | undefined> {
  try {
    return await fetch(url);
  } catch {
    return undefined;
  }
}

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'pcg-launch-'));
});

afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true });
  const admin = new pg.Client({ connectionString: inject('pgServerUrl') });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(database)} WITH (FORCE)`);
  await admin.end();
});

describe('npm start (the launcher)', () => {
  it('creates the database, runs the four services, restarts a crashed one, and stops them all on SIGINT with status 0', async () => {
    const restPort = await freePort();
    const mcpPort = await freePort();
    const launched = launch({
      DATABASE_URL: withDatabase(inject('pgServerUrl'), database),
      REDIS_URL: inject('redisUrl'),
      REDIS_PREFIX: `pcg-launch-${process.pid}:`,
      REST_PORT: String(restPort),
      MCP_HTTP_PORT: String(mcpPort),
      DATA_DIR: dataDir,
    });
    try {
      const health = await waitFor(async () => {
        const response = await answers(`http://127.0.0.1:${restPort}/healthz`);
        return response?.status === 200 ? response : undefined;
      }, 30_000, 'the console to answer /healthz');
      expect(health.status).toBe(200);
      expect(launched.output()).toContain(`created database ${database}`);

      const gateway = await waitFor(() => answers(`http://127.0.0.1:${mcpPort}/anything`), 15_000, 'the gateway');
      expect(gateway.status).toBe(404);
      for (const name of ['console', 'gateway', 'audit-writer', 'sync-worker']) {
        await waitFor(() => (launched.output().includes(`"msg":"${name} ready"`) ? true : undefined), 15_000, `${name} ready`);
      }
      const pids = childPids(launched.child.pid ?? -1);
      expect(pids).toHaveLength(4);

      // A crashed child comes back on its own.
      const consolePid = pids.find((pid) => spawnSync('ps', ['-o', 'args=', '-p', String(pid)], { encoding: 'utf8' }).stdout.includes('console'));
      expect(consolePid).toBeDefined();
      process.kill(consolePid ?? -1, 'SIGKILL');
      await waitFor(() => (launched.output().includes('console exited') ? true : undefined), 5_000, 'the crash to be noticed');
      await waitFor(async () => ((await answers(`http://127.0.0.1:${restPort}/healthz`))?.status === 200 ? true : undefined), 15_000, 'the restarted console');

      const everyChild = childPids(launched.child.pid ?? -1);
      launched.child.kill('SIGINT');
      expect(await launched.exited).toBe(0);
      expect(everyChild.filter(alive)).toEqual([]);
      expect(launched.output()).toMatch(/"service":"launcher".*"msg":"stopped"/);
      // Not a terminal: one pino JSON object a line, each naming its service in a field (no prefix).
      for (const line of launched.output().trim().split('\n')) {
        expect(JSON.parse(line), line).toMatchObject({ service: expect.stringMatching(/^(launcher|console|gateway|audit-writer|sync-worker)$/) });
      }
    } finally {
      if (launched.child.exitCode === null) launched.child.kill('SIGKILL');
    }
  }, 90_000);

  it('stops before starting anything when REST_PORT is not a port, naming REST_PORT', async () => {
    const launched = launch({ REST_PORT: 'abc', DATA_DIR: dataDir });
    expect(await launched.exited).toBe(1);
    expect(launched.output()).toMatch(/REST_PORT="abc": must be a port number/);
    expect(launched.output()).not.toContain('ready');
  });

  it('stops before starting anything on a setting only the sync-worker reads, and never prints a secret setting or a URL password', async () => {
    const secretKey = Buffer.from('not thirty-two bytes').toString('base64');
    const launched = launch({
      SOURCE_TIMEOUT_MS: 'abc',
      CREDENTIALS_KEY: secretKey,
      DATABASE_URL: 'mysql://pcg:hunter2-secret@127.0.0.1:1/pcg',
      DATA_DIR: dataDir,
    });
    expect(await launched.exited).toBe(1);
    const output = launched.output();
    expect(output).toContain('SOURCE_TIMEOUT_MS="abc"');
    expect(output).toContain('(read by sync-worker)');
    expect(output).toMatch(/CREDENTIALS_KEY: must be 32 bytes in base64/);
    expect(output).toContain('DATABASE_URL="mysql://pcg:***@127.0.0.1:1/pcg"');
    expect(output).not.toContain(secretKey);
    expect(output).not.toContain('hunter2');
    expect(output).not.toContain('ready');
    expect(output).not.toMatch(/postgres: \S+; redis:|database schema|applied migrations/);
  });

  async function failsFast(env: Record<string, string>): Promise<string> {
    const startedAt = Date.now();
    const launched = launch({ DATABASE_URL: withDatabase(inject('pgServerUrl'), database), REDIS_URL: inject('redisUrl'), DATA_DIR: dataDir, ...env });
    try {
      expect(await launched.exited).toBe(1);
      // The bound: a problem a restart cannot fix ends the launch within 5 s.
      expect(Date.now() - startedAt).toBeLessThan(5_000);
      expect(launched.output()).not.toContain(' ready"');
      return launched.output();
    } finally {
      if (launched.child.exitCode === null) launched.child.kill('SIGKILL');
    }
  }

  it('refuses a Console port that is already taken, naming the port and the fix', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as net.AddressInfo).port;
    try {
      const output = await failsFast({ REST_PORT: String(port), MCP_HTTP_PORT: String(await freePort()) });
      expect(output).toContain(`port ${port} (REST_PORT), where the Console would listen, is already in use`);
      expect(output).toContain('set REST_PORT to a free port');
    } finally {
      taken.close();
    }
  });

  it('refuses MCP_HTTP_PORT equal to REST_PORT', async () => {
    const port = String(await freePort());
    const output = await failsFast({ REST_PORT: port, MCP_HTTP_PORT: port });
    expect(output).toContain(`REST_PORT and MCP_HTTP_PORT are both ${port}`);
  });

  it('refuses a DATA_DIR it cannot write (here: below a file), naming DATA_DIR and the fix', async () => {
    const file = path.join(dataDir, 'a-file');
    await writeFile(file, '');
    const output = await failsFast({ DATA_DIR: path.join(file, 'data'), REST_PORT: String(await freePort()), MCP_HTTP_PORT: String(await freePort()) });
    expect(output).toMatch(/DATA_DIR \S+ is not writable \(ENOTDIR\): set DATA_DIR to a folder this user can write/);
  });

  it('refuses an immutable DATA_DIR (EPERM even for root)', { tags: ['needs-chattr'] }, async () => {
    const locked = path.join(dataDir, 'locked');
    await mkdir(locked, { recursive: true });
    const immutable = spawnSync('chattr', ['+i', locked], { encoding: 'utf8' });
    expect(immutable.status, `chattr +i ${locked}: ${immutable.stderr}`).toBe(0);
    try {
      const output = await failsFast({ DATA_DIR: locked, REST_PORT: String(await freePort()), MCP_HTTP_PORT: String(await freePort()) });
      expect(output).toContain(`DATA_DIR ${locked} is not writable (EPERM)`);
    } finally {
      spawnSync('chattr', ['-i', locked]);
    }
  });

  it('refuses a credentials key it cannot read, naming the file and the fix', async () => {
    const keyDir = path.join(dataDir, 'unreadable-key');
    // A folder where the key file should be: unreadable as a file, even for root.
    await mkdir(path.join(keyDir, 'credentials.key'), { recursive: true });
    const output = await failsFast({ DATA_DIR: keyDir, REST_PORT: String(await freePort()), MCP_HTTP_PORT: String(await freePort()) });
    expect(output).toContain(`the credentials key ${path.join(keyDir, 'credentials.key')} cannot be read (EISDIR)`);
    expect(output).toContain('or set CREDENTIALS_KEY');
  });

  it('prints pretty, local-time lines with LOG_FORMAT=pretty (as on a terminal)', async () => {
    const port = String(await freePort());
    const output = await failsFast({ REST_PORT: port, MCP_HTTP_PORT: port, LOG_FORMAT: 'pretty' });
    const time = new Date();
    const hour = String(time.getHours()).padStart(2, '0');
    expect(output).toMatch(new RegExp(`^\\[${hour}:\\d\\d:\\d\\d\\.\\d{3}\\] ERROR: \\[launcher\\] REST_PORT and MCP_HTTP_PORT are both ${port}`, 'm'));
    expect(output).not.toContain('"level"');
  });

  it('makes a service that cannot listen exit with the status the launcher does not restart, with the fix', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as net.AddressInfo).port;
    let output = '';
    const child = spawn(process.execPath, [path.join(root, 'services/console/src/main.ts')], {
      cwd: root,
      env: {
        PATH: process.env.PATH ?? '',
        ...guardedChildEnv(),
        DATABASE_URL: inject('pgServerUrl'),
        REDIS_URL: inject('redisUrl'),
        REDIS_PREFIX: `pcg-taken-${process.pid}:`,
        REST_PORT: String(port),
        DATA_DIR: dataDir,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      const status = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      expect(status).toBe(EXIT_NEEDS_OPERATOR);
      expect(output).toContain('EADDRINUSE');
      expect(output).toContain('"fix":"its port is already in use');
    } finally {
      taken.close();
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
