export * from './audit-types.ts';
export * from './audit-fns.ts';
export * from './audit-queue.ts';
export * from './audit-producer.ts';
export * from './audit-throttle.ts';
export * from './audit-cursor.ts';
export * from './audit-queries.ts';
export * from './audit-service.ts';
