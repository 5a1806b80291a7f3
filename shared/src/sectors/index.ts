export * from './sector-names.ts';
