export * from './home-assistant/home-assistant-fixtures.ts';
export * from './home-assistant/home-assistant-double.ts';
export * from './health-auto-export/health-auto-export-sender.ts';
export * from './simplefin/simplefin-double.ts';
