export * from './account-matches-fns.ts';
export * from './account-matches-types.ts';
export * from './account-matches-service.ts';
export * from './categories.ts';
export * from './account-types.ts';
