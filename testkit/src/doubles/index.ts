export * from './home-assistant/home-assistant-fixtures.ts';
export * from './home-assistant/home-assistant-double.ts';
export * from './health-auto-export/health-auto-export-sender.ts';
export * from './icloud/test-ca.ts';
export * from './icloud/local-transport.ts';
export * from './icloud/local-servers.ts';
export * from './icloud/dav-seeder.ts';
