export * from './pg-values.ts';
