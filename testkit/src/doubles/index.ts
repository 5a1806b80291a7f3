export * from './home-assistant-fixtures.ts';
export * from './home-assistant-double.ts';
export * from './health-auto-export-sender.ts';
