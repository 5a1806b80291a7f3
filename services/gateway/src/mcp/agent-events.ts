import type { DatabasePool } from 'slonik';
import { agentEventsChannel, createAgentQueries, parseAgentEvent } from '@pcg/shared/grants';
import type { Logger } from '@pcg/shared/logger';
import { createRedis, keepSubscribed, type Redis, type RedisSettings } from '@pcg/shared/redis';
import { findEndedBridgeCredentials } from '../bridge/access-tokens.ts';
import type { SessionRegistry } from './session-registry.ts';

/**
 * How long the gateway waits between two checks of every live session's grant while the event channel
 * is down; with the query's own time this keeps a missed key event's effect well inside a second.
 */
export const FALLBACK_POLL_MS = 250;

/**
 * A PING goes out on the subscriber connection this often, and a PONG later than the deadline counts as
 * the channel being down: a hung Redis (stopped, swapping, wedged) keeps its connections open and
 * answers nothing, so no `close` ever comes and no event either.
 */
export const HEARTBEAT_MS = 1_000;
export const HEARTBEAT_DEADLINE_MS = 1_000;

/**
 * Ends every live session whose grant or credential no longer stands in Postgres: the grant row is gone
 * (deleted; a grant re-created under the same name is another row), revoked, past its deadline or of
 * another generation, or, for a session held by a bridge token, its sign-in chain was revoked or its key
 * rotated. Two queries for all live sessions, however many.
 */
export async function recheckSessions(db: DatabasePool, registry: SessionRegistry, reason: string): Promise<number> {
  const live = registry.liveSessions();
  if (live.length === 0) return 0;
  const agentIds = [...new Set(live.map((session) => session.agentId))];
  const tokenHashes = [...new Set(live.filter((session) => session.credentialKind === 'bridge_token').map((session) => session.credentialHash))];
  const [standings, endedTokens] = await Promise.all([createAgentQueries(db).standings(agentIds), findEndedBridgeCredentials(db, tokenHashes)]);
  const current = new Map(standings.map((row) => [row.id, row]));
  const stale = live.filter((session) => {
    const row = current.get(session.agentId);
    if (!row || row.dead || row.generation !== session.generation) return true;
    return session.credentialKind === 'bridge_token' && endedTokens.has(session.credentialHash);
  });
  await Promise.all(stale.map((session) => registry.end(session.id, reason)));
  return stale.length;
}

/**
 * Runs `check` every `intervalMs` (counted from the end of the previous run, so runs never overlap)
 * from `start` on. `settle` asks for one more run at once; the first run that succeeds after it is the
 * last, and its count goes to `onSettled`. A failing check is logged once until one succeeds again.
 */
function createFallbackPoll(deps: { intervalMs: number; check(): Promise<number>; onSettled(ended: number): void; log: Logger }) {
  let timer: NodeJS.Timeout | undefined;
  let active = false;
  let settling = false;
  let running = false;
  let failing = false;

  function schedule(delayMs: number): void {
    clearTimeout(timer);
    timer = setTimeout(() => void tick(), delayMs);
    timer.unref();
  }

  async function tick(): Promise<void> {
    timer = undefined;
    if (running || !active) return;
    running = true;
    const last = settling;
    let succeeded = false;
    try {
      const ended = await deps.check();
      succeeded = true;
      if (failing) deps.log.info('checking live sessions against Postgres works again');
      failing = false;
      if (last && settling) {
        active = false;
        settling = false;
        deps.onSettled(ended);
      } else if (ended > 0) {
        deps.log.info({ ended }, 'ended sessions whose grant changed while the event channel was down');
      }
    } catch (error) {
      if (!failing) deps.log.error({ err: error }, 'checking live sessions against Postgres failed; retrying');
      failing = true;
    } finally {
      running = false;
    }
    // A settle that came while this run was under way gets its own run at once.
    if (active) schedule(settling && succeeded && !last ? 0 : deps.intervalMs);
  }

  return {
    get active() {
      return active;
    },
    start(): void {
      settling = false;
      if (active) return;
      active = true;
      schedule(deps.intervalMs);
    },
    settle(): void {
      if (!active) return;
      settling = true;
      if (!running) schedule(0);
    },
    stop(): void {
      active = false;
      settling = false;
      clearTimeout(timer);
      timer = undefined;
    },
  };
}

/**
 * PINGs `subscriber` every `intervalMs` (counted from the answer, so at most one is ever outstanding)
 * while it is ready; `onMissed` runs once when a PING goes unanswered past `deadlineMs`, `onAnswered`
 * after every PONG. A PING that fails with the connection is the `close` handler's business.
 */
function startHeartbeat(deps: {
  subscriber: Pick<Redis, 'status' | 'ping'>;
  intervalMs: number;
  deadlineMs: number;
  onMissed(): void;
  onAnswered(): void;
}) {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(() => void beat(), deps.intervalMs);
    timer.unref();
  }

  async function beat(): Promise<void> {
    if (deps.subscriber.status !== 'ready') return schedule();
    const deadline = setTimeout(() => {
      if (!stopped) deps.onMissed();
    }, deps.deadlineMs);
    deadline.unref();
    try {
      await deps.subscriber.ping();
      clearTimeout(deadline);
      if (!stopped) deps.onAnswered();
    } catch {
      clearTimeout(deadline);
    }
    schedule();
  }

  schedule();
  return {
    stop(): void {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

export type AgentEventsDeps = {
  settings: RedisSettings;
  db: DatabasePool;
  registry: SessionRegistry;
  log: Logger;
  /** Pause between grant checks while the event channel is down; default `FALLBACK_POLL_MS`. */
  fallbackPollMs?: number;
  /** Pause between PINGs on the subscriber connection; default `HEARTBEAT_MS`. */
  heartbeatMs?: number;
  /** How long a PONG may take before the channel counts as down; default `HEARTBEAT_DEADLINE_MS`. */
  heartbeatDeadlineMs?: number;
};

/**
 * Listens on `<prefix>agent-events` with a dedicated subscriber connection and ends an agent's live
 * sessions on every grant change (design 4.7). While that connection is down, no event can arrive, so
 * every live session's grant is checked in Postgres every `fallbackPollMs` instead; once the channel is
 * subscribed again the poll stops and one last check covers what happened in between. A Redis that
 * keeps the connection open but stops answering is caught by a PING with a deadline, and is treated the
 * same way until it answers again.
 */
export async function listenForAgentEvents(deps: AgentEventsDeps) {
  const { db, registry, log } = deps;
  const channel = agentEventsChannel(deps.settings);
  const subscriber = createRedis(deps.settings, 'subscriber', 'gateway-agent-events');
  const poll = createFallbackPoll({
    intervalMs: deps.fallbackPollMs ?? FALLBACK_POLL_MS,
    check: () => recheckSessions(db, registry, 'grant changed while the event channel was down'),
    onSettled: (ended) => log.info({ ended }, 'rechecked live sessions after a Redis reconnect'),
    log,
  });
  let closing = false;
  /** The connection is open but a PING went unanswered; a PONG on this same connection settles it. */
  let hung = false;

  subscriber.on('error', (error: Error) => log.warn({ err: error }, 'agent events connection error'));
  subscriber.on('close', () => {
    // The reconnect's own subscription settles the poll from here on.
    hung = false;
    if (closing) return;
    if (!poll.active) log.warn('agent events channel down; checking live sessions against Postgres until it is back');
    poll.start();
  });
  const heartbeat = startHeartbeat({
    subscriber,
    intervalMs: deps.heartbeatMs ?? HEARTBEAT_MS,
    deadlineMs: deps.heartbeatDeadlineMs ?? HEARTBEAT_DEADLINE_MS,
    onMissed: () => {
      if (hung || closing) return;
      hung = true;
      if (!poll.active) log.warn('agent events channel not answering; checking live sessions against Postgres until it answers');
      poll.start();
    },
    onAnswered: () => {
      if (!hung) return;
      hung = false;
      log.info('agent events channel answers again');
      // Still subscribed (the connection never closed): one last check covers the silence, then the poll stops.
      poll.settle();
    },
  });
  subscriber.on('message', (_channel: string, message: string) => {
    const event = parseAgentEvent(message);
    if (!event) {
      log.warn('ignored a malformed agent event');
      return;
    }
    void registry.endAgent(event.agent, `agent ${event.kind}`);
  });
  await keepSubscribed(subscriber, channel, {
    // The last check runs once the subscription is acknowledged, so no change can fall between the two;
    // until then (or if that check fails) the poll goes on.
    onResubscribed: () => {
      if (poll.active) poll.settle();
    },
    onError: (error) => log.warn({ err: error }, 'agent events subscription failed'),
  });
  return {
    async close() {
      closing = true;
      heartbeat.stop();
      poll.stop();
      await subscriber.quit().catch(() => subscriber.disconnect());
    },
  };
}
