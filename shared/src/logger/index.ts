export * from './create-logger.ts';
export * from './pretty.ts';
