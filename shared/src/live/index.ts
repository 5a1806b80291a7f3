export * from './live-types.ts';
