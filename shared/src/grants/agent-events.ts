import { eventChannel, type EventPublisher } from '../redis/index.ts';
import { AGENT_EVENTS_CHANNEL, AgentEventSchema, type AgentEvent } from './grants-types.ts';

/** `{agent, kind}` on `<REDIS_PREFIX>agent-events`, after every grant change commits (design 4.7). */
const agentEvents = eventChannel(AGENT_EVENTS_CHANNEL, AgentEventSchema);

export type AgentEventPublisher = EventPublisher<AgentEvent>;
export const agentEventsChannel = agentEvents.channel;
export const createAgentEventPublisher = agentEvents.publisher;
/** Null for anything that is not an agent event. */
export const parseAgentEvent = agentEvents.parse;
