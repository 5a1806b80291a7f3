import { randomBytes } from 'node:crypto';
import type { AuditEvent, AuditRecorder } from '@pcg/shared/audit';
import { loadConfig } from '@pcg/shared/config';
import { createCapturingLogger, type TestEnvironment } from '@pcg/testkit/testing';
import { consoleConfigSchema } from '../src/config.ts';
import { startConsole, type RunningConsole } from '../src/service.ts';

/** An audit recorder that keeps the events, standing in for the Redis producer (our own interface). */
export function collectingAudit() {
  const events: AuditEvent[] = [];
  const recorder = { record: (event: AuditEvent) => void events.push(event) } satisfies AuditRecorder;
  return { events, recorder };
}

export type TestConsole = RunningConsole & { logs: () => string[] };

export async function startTestConsole(testEnv: TestEnvironment, audit: AuditRecorder, env: Record<string, string> = {}): Promise<TestConsole> {
  const { log, lines } = createCapturingLogger('console');
  const config = loadConfig(consoleConfigSchema, testEnv.env({ REST_PORT: '0', CREDENTIALS_KEY: randomBytes(32).toString('base64'), ...env }));
  const running = await startConsole(config, log, { audit });
  return Object.assign(running, { logs: lines });
}

/** Answers are inspected freely in tests; the schemas they must match are the routes' own. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function api(base: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: any; text: string }> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: response.status, json, text };
}
