export * from './live-types.ts';
export * from './live-queries.ts';
