export * from './connections-types.ts';
export * from './connection-health.ts';
export * from './connections-queries.ts';
export * from './connection-check.ts';
