export * from './data-dir.ts';
export * from './embedded-postgres.ts';
export * from './keeper-client.ts';
export * from './keeper-state.ts';
export * from './probe.ts';
export * from './redis-server.ts';
export * from './resolve-services.ts';
export * from './resolved-database.ts';
