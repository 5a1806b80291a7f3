export * from './test-environment.ts';
export * from './fixtures.ts';
export * from './console-client.ts';
export * from './migration-database.ts';
