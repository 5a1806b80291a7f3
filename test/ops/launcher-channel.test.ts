import { fork } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { guardedChildEnv } from '../support/no-internet-guard.ts';

const child = path.join(import.meta.dirname, '../support/late-service.ts');

describe('a service started by the launcher (closeOnSignals)', () => {
  it('stops a service whose launcher went away while the service was still starting (no orphan)', async () => {
    // The fixture starts, waits until the channel has closed, and only then wires its close: the
    // 'disconnect' event has already been emitted, so only the channel's state can tell the launcher is gone.
    const service = fork(child, [], { env: { ...process.env, ...guardedChildEnv() }, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
    let output = '';
    service.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await once(service, 'spawn');
    service.disconnect();
    const [code] = (await Promise.race([once(service, 'exit'), new Promise((resolve) => setTimeout(() => resolve(['still running']), 10_000))])) as [unknown];
    if (code === 'still running') service.kill('SIGKILL');
    expect(code).toBe(0);
    expect(output).toContain('closed');
  }, 20_000);
});
