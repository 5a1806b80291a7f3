export * from './create-redis.ts';
export * from './keep-subscribed.ts';
