export * from './cache-record-schema.ts';
export * from './cache-writes.ts';
