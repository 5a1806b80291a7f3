export * from './grants-types.ts';
