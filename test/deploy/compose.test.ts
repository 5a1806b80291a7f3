import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

type ComposeService = {
  image?: string;
  build?: unknown;
  command?: string[];
  ports?: string[];
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
    for (const mapping of published) expect(mapping).toMatch(/^127\.0\.0\.1:/);
  });

  it('publishes the Console and the agent port', () => {
    expect(services.console?.ports?.[0]).toMatch(/:8787$/);
    expect(services.gateway?.ports?.[0]).toMatch(/:8788$/);
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
