export * from './test-environment.ts';
export * from './fixtures.ts';
