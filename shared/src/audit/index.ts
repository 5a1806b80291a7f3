export * from './audit-types.ts';
