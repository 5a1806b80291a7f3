export * from './reads-types.ts';
export * from './reads-errors.ts';
export * from './reads-service.ts';
export * from './call-guard.ts';
export * from './actions-service.ts';
export * from './live-reads.ts';
export * from './action-target.ts';
