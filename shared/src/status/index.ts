export * from './gateway-heartbeat.ts';
export * from './dependency-probe.ts';
export * from './service-version.ts';
