export * from './metrics-catalogue.ts';
export * from './metrics-publisher.ts';
