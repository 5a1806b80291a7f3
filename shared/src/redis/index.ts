export * from './create-redis.ts';
export * from './keep-subscribed.ts';
export * from './event-channel.ts';
