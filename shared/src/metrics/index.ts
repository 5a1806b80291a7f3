export * from './metrics-catalogue.ts';
export * from './metrics-publisher.ts';
export * from './process-series.ts';
export * from './process-liveness.ts';
