export * from './config-schema.ts';
export * from './load-config.ts';
