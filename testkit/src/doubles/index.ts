export * from './home-assistant/home-assistant-fixtures.ts';
export * from './home-assistant/home-assistant-double.ts';
export * from './health-auto-export/health-auto-export-sender.ts';
export * from './microsoft-graph/graph-double.ts';
export * from './microsoft-graph/graph-identity.ts';
export * from './microsoft-graph/graph-store.ts';
export * from './microsoft-graph/graph-demo.ts';
export * from './simplefin/simplefin-double.ts';
