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
  healthcheck?: { test: string[] };
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
};

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

  it('migrates before any service starts', () => {
    for (const name of APPS) expect(services[name]?.depends_on?.migrate?.condition).toBe('service_completed_successfully');
  });
});
