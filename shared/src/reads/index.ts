export * from './reads-types.ts';
export * from './reads-errors.ts';
export * from './reads-service.ts';
