export * from './shutdown.ts';
export * from './infrastructure.ts';
export * from './run-service.ts';
export * from './exit-status.ts';
export * from './within.ts';
