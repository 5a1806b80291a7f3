export * from './create-redis.ts';
