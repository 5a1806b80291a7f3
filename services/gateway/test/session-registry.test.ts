import { describe, expect, it, vi } from 'vitest';
import type { SessionTransport } from '../src/mcp/session-transport.ts';
import { createCapturingLogger } from '@pcg/testkit/testing';
import { createSessionRegistry, type SessionHandle } from '../src/mcp/session-registry.ts';

const grant = (agentName: string, expiresAt: string | null = null) => ({ agentId: 1, agentName, sectors: [], expiresAt, generation: 0 });

function handle(id: string, agentName: string, expiresAt: string | null = null): SessionHandle & { closed: number } {
  const session = {
    id,
    grant: grant(agentName, expiresAt),
    credentialHash: 'h',
    credentialValidUntil: null,
    transport: {} as SessionTransport,
    protocolVersion: '2025-11-25',
    eventIdStatus: () => 'unknown' as const,
    closed: 0,
    async close() {
      session.closed += 1;
    },
  };
  return session;
}

const registry = (maxSessions = 3) => createSessionRegistry({ maxSessions, idleMs: 60_000, log: createCapturingLogger().log });

describe('session registry', () => {
  it('counts sessions still initializing toward the cap', () => {
    const sessions = registry(2);
    const first = sessions.reserve('a');
    const second = sessions.reserve('a');
    expect(first).not.toBeNull();
    expect(second).not.toBeNull();
    expect(sessions.reserve('b')).toBeNull();
    second?.release();
    expect(sessions.reserve('b')).not.toBeNull();
  });

  it('refuses a session whose agent had a key event while it was starting', async () => {
    const sessions = registry();
    const starting = sessions.reserve('rotating');
    await sessions.endAgent('rotating', 'rotated');
    expect(starting?.doomed).toBe(true);
    expect(starting?.commit(handle('s1', 'rotating'))).toBe(false);
    expect(sessions.touch('s1')).toBeUndefined();
  });

  it('ends every session of one agent and closes each once', async () => {
    const sessions = registry();
    const mine = [handle('s1', 'a'), handle('s2', 'a')];
    const theirs = handle('s3', 'b');
    for (const session of [...mine, theirs]) sessions.reserve(session.grant.agentName)?.commit(session);
    expect(await sessions.endAgent('a', 'revoked')).toBe(2);
    await sessions.end('s1', 'again');
    expect(mine.map((session) => session.closed)).toEqual([1, 1]);
    expect(theirs.closed).toBe(0);
    expect(sessions.size).toBe(1);
  });

  it('ends a session at its key\'s expiry instant', async () => {
    vi.useFakeTimers({ now: new Date('2026-11-22T12:00:00Z') });
    try {
      const sessions = createSessionRegistry({ maxSessions: 3, idleMs: 86_400_000, log: createCapturingLogger().log, now: Date.now });
      const session = handle('s1', 'a', '2026-11-22T12:00:05.000Z');
      sessions.reserve('a')?.commit(session);
      await vi.advanceTimersByTimeAsync(4_999);
      expect(session.closed).toBe(0);
      await vi.advanceTimersByTimeAsync(1);
      expect(session.closed).toBe(1);
      expect(sessions.touch('s1')).toBeUndefined();
    } finally {
      vi.useRealTimers();
    }
  });

  it('reaps a session idle for longer than the idle time', async () => {
    vi.useFakeTimers({ now: new Date('2026-11-22T12:00:00Z') });
    try {
      const sessions = createSessionRegistry({ maxSessions: 3, idleMs: 60_000, log: createCapturingLogger().log, now: Date.now });
      const idle = handle('idle', 'a');
      const busy = handle('busy', 'a');
      sessions.reserve('a')?.commit(idle);
      sessions.reserve('a')?.commit(busy);
      for (let minute = 0; minute < 3; minute += 1) {
        await vi.advanceTimersByTimeAsync(30_000);
        sessions.touch('busy');
      }
      expect(idle.closed).toBe(1);
      expect(busy.closed).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});
