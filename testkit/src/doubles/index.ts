export * from './home-assistant/home-assistant-fixtures.ts';
export * from './home-assistant/home-assistant-double.ts';
export * from './health-auto-export/health-auto-export-sender.ts';
export * from './whoop/whoop-fixtures.ts';
export * from './whoop/whoop-double.ts';
export * from './google/google-double.ts';
