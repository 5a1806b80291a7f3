import { prefixed, type Redis, type RedisSettings } from '../redis/index.ts';
import { AGENT_EVENTS_CHANNEL, AgentEventSchema, type AgentEvent } from './grants-types.ts';

/** `<REDIS_PREFIX>agent-events`: ioredis does not prefix channel names, so every side builds it here. */
export function agentEventsChannel(settings: Pick<RedisSettings, 'REDIS_PREFIX'>): string {
  return prefixed(settings, AGENT_EVENTS_CHANNEL);
}

export type AgentEventPublisher = {
  /** Publishes `{agent, kind}` as JSON; call only after the change committed (design 4.7). */
  publish(event: AgentEvent): Promise<void>;
};

export function createAgentEventPublisher(
  redis: Pick<Redis, 'publish'>,
  settings: Pick<RedisSettings, 'REDIS_PREFIX'>,
): AgentEventPublisher {
  const channel = agentEventsChannel(settings);
  return {
    async publish(event) {
      await redis.publish(channel, JSON.stringify(AgentEventSchema.parse(event)));
    },
  };
}

/** Reads a message from the channel; null for anything that is not an agent event. */
export function parseAgentEvent(message: string): AgentEvent | null {
  try {
    const parsed = AgentEventSchema.safeParse(JSON.parse(message));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
