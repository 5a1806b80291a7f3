export * from './domain-errors.ts';
