export * from './audit-types.ts';
export * from './audit-fns.ts';
export * from './audit-queue.ts';
export * from './audit-producer.ts';
export * from './audit-throttle.ts';
