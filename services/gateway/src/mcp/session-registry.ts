import type { Logger } from '@pcg/shared/logger';
import type { Grant } from '@pcg/shared/grants';
import type { EventIdStatus } from './session-event-store.ts';
import type { SessionTransport } from './session-transport.ts';

/** What the registry needs of a live MCP session to end it. */
export type SessionHandle = {
  id: string;
  grant: Grant;
  /** SHA-256 of the credential the session accepts (hex): the one that opened it, or a refreshed bridge token. */
  credentialHash: string;
  /** When that credential stops being accepted: a bridge token's own expiry; null for an agent key. */
  credentialValidUntil: string | null;
  transport: SessionTransport;
  /** The protocol version the session's initialize negotiated. */
  protocolVersion: string;
  /** What a `Last-Event-ID` names in the session's event store. */
  eventIdStatus(eventId: string): EventIdStatus;
  /** Ends the transport and the server; must be idempotent. */
  close(): Promise<void>;
};

type Entry = SessionHandle & { lastActivity: number; expiryTimer?: NodeJS.Timeout };

/** What a session's current credential is: an agent key, or a bridge access token (`pcgat_`). */
export type CredentialKind = 'agent_key' | 'bridge_token';

/** A live session as the re-check against the store sees it. */
export type LiveSession = {
  id: string;
  /** The grant row's id: a grant deleted and re-created under the same name has another one. */
  agentId: number;
  generation: number;
  credentialKind: CredentialKind;
  credentialHash: string;
};

/** Only a bridge access token has a validity of its own (`credentialValidUntil`); an agent key has none. */
const credentialKindOf = (entry: Pick<SessionHandle, 'credentialValidUntil'>): CredentialKind =>
  entry.credentialValidUntil === null ? 'agent_key' : 'bridge_token';

/** A place held for a session that is still initializing; it counts toward the cap. */
export type Reservation = {
  readonly agentName: string;
  /** Set when a key event for this agent arrived while the session was starting. */
  readonly doomed: boolean;
  /** Registers the started session; returns false (and the caller must close it) when it was doomed. */
  commit(session: SessionHandle): boolean;
  release(): void;
};

export type SessionRegistryOptions = {
  /** Open plus initializing sessions allowed at once (spec 8: 512). */
  maxSessions: number;
  /** Sessions with no request for this long are closed. */
  idleMs: number;
  log: Logger;
  now?: () => number;
};

/** The longest delay setTimeout honours; later expiries are re-armed in steps. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * Owns every open session of this gateway: the cap (initializing sessions included, so parallel
 * initializes cannot overshoot), the per-agent index used to end an agent's sessions on a key event,
 * the expiry timers, and idle reaping. Closing always goes through `end`, which is idempotent.
 */
export function createSessionRegistry(options: SessionRegistryOptions) {
  const now = options.now ?? Date.now;
  const sessions = new Map<string, Entry>();
  const pending = new Set<{ agentName: string; doomed: boolean }>();

  async function end(id: string, reason: string): Promise<void> {
    const entry = sessions.get(id);
    if (!entry) return;
    sessions.delete(id);
    clearTimeout(entry.expiryTimer);
    options.log.info({ sessionId: id, agent: entry.grant.agentName, reason }, 'mcp session ended');
    await entry.close().catch((error: unknown) => options.log.warn({ err: error, sessionId: id }, 'closing a session failed'));
  }

  function armExpiry(entry: Entry): void {
    if (entry.grant.expiresAt === null) return;
    const due = Date.parse(entry.grant.expiresAt) - now();
    entry.expiryTimer = setTimeout(
      () => (due > MAX_TIMER_MS ? armExpiry(entry) : void end(entry.id, 'key expired')),
      Math.max(0, Math.min(due, MAX_TIMER_MS)),
    );
    entry.expiryTimer.unref();
  }

  const reaper = setInterval(() => {
    const cutoff = now() - options.idleMs;
    for (const entry of sessions.values()) if (entry.lastActivity < cutoff) void end(entry.id, 'idle');
  }, Math.min(60_000, Math.max(1_000, Math.floor(options.idleMs / 4))));
  reaper.unref();

  return {
    get size(): number {
      return sessions.size + pending.size;
    },

    /** Holds a place for a new session, or null when the cap is reached (no live session is dropped). */
    reserve(agentName: string): Reservation | null {
      if (sessions.size + pending.size >= options.maxSessions) return null;
      const slot = { agentName, doomed: false };
      pending.add(slot);
      return {
        agentName,
        get doomed() {
          return slot.doomed;
        },
        commit(session) {
          pending.delete(slot);
          if (slot.doomed) return false;
          const entry: Entry = { ...session, lastActivity: now() };
          sessions.set(session.id, entry);
          armExpiry(entry);
          return true;
        },
        release() {
          pending.delete(slot);
        },
      };
    },

    /** The live session with this id, marking it active; undefined when there is none. */
    touch(id: string): SessionHandle | undefined {
      const entry = sessions.get(id);
      if (entry) entry.lastActivity = now();
      return entry;
    },

    /** Replaces the credential a session accepts (a refreshed bridge token of the same grant). */
    rebind(id: string, credentialHash: string, validUntil: string | null): void {
      const entry = sessions.get(id);
      if (!entry) return;
      entry.credentialHash = credentialHash;
      entry.credentialValidUntil = validUntil;
    },

    end,

    /** Ends every session of an agent, and refuses its sessions still starting (spec 3.1, design 4.7). */
    async endAgent(agentName: string, reason: string): Promise<number> {
      for (const slot of pending) if (slot.agentName === agentName) slot.doomed = true;
      const ids = [...sessions.values()].filter((entry) => entry.grant.agentName === agentName).map((entry) => entry.id);
      await Promise.all(ids.map((id) => end(id, reason)));
      return ids.length;
    },

    /** Every live session with the grant row and generation it holds and the credential it now accepts. */
    liveSessions(): LiveSession[] {
      return [...sessions.values()].map((entry) => ({
        id: entry.id,
        agentId: entry.grant.agentId,
        generation: entry.grant.generation,
        credentialKind: credentialKindOf(entry),
        credentialHash: entry.credentialHash,
      }));
    },

    async closeAll(reason: string): Promise<void> {
      clearInterval(reaper);
      for (const slot of pending) slot.doomed = true;
      await Promise.all([...sessions.keys()].map((id) => end(id, reason)));
    },
  };
}

export type SessionRegistry = ReturnType<typeof createSessionRegistry>;
