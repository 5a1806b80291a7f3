export * from './hae-time.ts';
export * from './hae-format.ts';
export * from './ingest-payload.ts';
export * from './json-position.ts';
export * from './ingest-types.ts';
