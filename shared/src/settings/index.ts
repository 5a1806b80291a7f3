export * from './public-origin.ts';
export * from './settings-types.ts';
export * from './settings-queries.ts';
export * from './settings-events.ts';
export * from './settings-service.ts';
export * from './time-zone.ts';
