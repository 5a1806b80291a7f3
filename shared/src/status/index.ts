export * from './gateway-heartbeat.ts';
export * from './dependency-probe.ts';
