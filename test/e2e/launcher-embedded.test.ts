import { chmod, mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@pcg/testkit/testing';
import { alive, commandOf, embeddedEnv, killGroups, launcher, problemLines, processTree, root, run, waitForLine, type Run } from './embedded-launch.ts';

/**
 * `npm start` on a machine with no Postgres and no Redis: the embedded Postgres and a redis-server child,
 * shared with the other entry points, and nothing left running after any way of stopping it.
 */
const READY = 'Ctrl-C stops everything';
let dataDir: string;
let env: Record<string, string>;
const started: Run[] = [];
const seen = new Set<number>();

function start(command?: 'npm'): Run {
  const launched = command === 'npm' ? run('npm', ['start'], env) : launcher(env);
  started.push(launched);
  return launched;
}

function snapshot(launched: Run): number[] {
  const pids = processTree(launched, dataDir);
  for (const pid of pids) seen.add(pid);
  return pids;
}

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'pcg-embedded-'));
  env = await embeddedEnv(dataDir);
});

afterAll(async () => {
  killGroups([...started.map((launched) => launched.child.pid ?? -1), ...seen]);
  await rm(dataDir, { recursive: true, force: true });
});

async function json(response: Response): Promise<Record<string, unknown>> {
  return (await response.json()) as Record<string, unknown>;
}

describe('npm start on the embedded Postgres and a redis-server child', () => {
  it('runs the README\'s "Trying it as an agent" steps, with seed:demo and migrate sharing the running stores', async () => {
    const console = `http://127.0.0.1:${env.REST_PORT}`;
    const launched = start('npm');
    await waitForLine(launched, READY);

    // 1. `npm start`, then in another terminal `npm run seed:demo`.
    const seed = run('npm', ['run', 'seed:demo'], env);
    expect(await seed.exited, seed.output()).toBe(0);
    expect(seed.output()).toContain('demo data written');
    const migrate = run('npm', ['run', 'migrate'], env);
    expect(await migrate.exited, migrate.output()).toBe(0);
    expect(migrate.output()).toContain('the schema is up to date');

    // 2. Create a key.
    const created = await fetch(`${console}/api/agents`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'my-agent', sectors: ['finance', 'home'], expiresInDays: 30 }),
    });
    expect(created.status).toBe(201);
    const { key } = (await json(created)) as { key: string };
    // 3. Read the same answers over REST.
    const context = await fetch(`${console}/api/context`, { headers: { authorization: `Bearer ${key}` } });
    expect(context.status).toBe(200);
    // 4. Read what it did, and the health of everything.
    await waitFor(async () => {
      const audit = await fetch(`${console}/api/audit?agent=my-agent`);
      return audit.status === 200 && JSON.stringify(await json(audit)).includes('my-agent') ? true : undefined;
    }, 10_000, 'the audit of my-agent');
    const status = await fetch(`${console}/api/status`);
    expect(status.status).toBe(200);

    // The stores were started once, by `npm start`, and are still the same ones.
    expect(seed.output()).not.toContain('starting the embedded Postgres');
    expect(launched.output().match(/starting the embedded Postgres/g)).toHaveLength(1);

    // A second `npm start` on the same ports finds the stores and names the taken port.
    const second = start();
    expect(await second.exited).toBe(1);
    expect(second.output()).toContain(`port ${env.REST_PORT} (REST_PORT)`);
    expect(second.output()).not.toContain('install PostgreSQL');

    // Ctrl-C in the terminal: SIGINT to the whole process group.
    const pids = snapshot(launched);
    expect(pids.length).toBeGreaterThanOrEqual(8);
    process.kill(-(launched.child.pid ?? 0), 'SIGINT');
    expect(await launched.exited).toBe(0);
    expect(pids.filter(alive)).toEqual([]);
    expect(problemLines(launched.output())).toEqual([]);
    expect(launched.output()).toMatch(/"service":"launcher".*"msg":"stopped"/);
  }, 120_000);

  it.each(['SIGTERM', 'SIGHUP'] as const)('stops everything on %s, with no error line and a final "stopped"', async (signal) => {
    const launched = start();
    await waitForLine(launched, READY);
    const pids = snapshot(launched);
    const sentAt = Date.now();
    process.kill(-(launched.child.pid ?? 0), signal);
    expect(await launched.exited).toBe(0);
    expect(Date.now() - sentAt).toBeLessThan(10_000);
    expect(pids.filter(alive)).toEqual([]);
    expect(problemLines(launched.output())).toEqual([]);
    expect(launched.output()).toMatch(/"service":"launcher".*"msg":"stopped"/);
  }, 60_000);

  it('leaves no orphan when the launcher is killed with kill -9, and the next start finds the data', async () => {
    const launched = start();
    await waitForLine(launched, READY);
    const pids = snapshot(launched);
    process.kill(launched.child.pid ?? 0, 'SIGKILL');
    await launched.exited;
    // A service stops on its own once the launcher's channel closes, within its 25 s grace (then it exits
    // anyway), and only then do the stores stop: that is the bound. Usually all is gone in under 2 s.
    await waitFor(
      () => (pids.filter(alive).length === 0 ? true : undefined),
      30_000,
      `every process of the killed launcher to end: ${pids.filter(alive).map(commandOf).join('; ')}`,
    );

    const next = start();
    await waitForLine(next, READY);
    snapshot(next);
    process.kill(next.child.pid ?? 0, 'SIGTERM');
    expect(await next.exited).toBe(0);
  }, 90_000);

  it('names the fix when the postgres user cannot enter DATA_DIR (a folder only root can enter), leaving no password file', async () => {
    const secretFiles = async () => (await readdir(os.tmpdir())).filter((name) => /^(pg-password-|pcg-initdb-)/.test(name));
    const before = await secretFiles();
    const privateHome = await mkdtemp(path.join(os.tmpdir(), 'pcg-private-'));
    await chmod(privateHome, 0o700);
    try {
      const startedAt = Date.now();
      const launched = run(process.execPath, [path.join(root, 'scripts/launcher.ts')], { ...(await embeddedEnv(path.join(privateHome, 'data'))) });
      started.push(launched);
      expect(await launched.exited).toBe(1);
      expect(Date.now() - startedAt).toBeLessThan(5_000);
      expect(launched.output()).toContain('the postgres system user cannot reach');
      expect(launched.output()).toContain('set DATA_DIR to a folder outside a private home');
      expect(launched.output()).not.toContain('EACCES\\n    at');
      expect(await secretFiles()).toEqual(before);
    } finally {
      await rm(privateHome, { recursive: true, force: true });
    }
  });
});
