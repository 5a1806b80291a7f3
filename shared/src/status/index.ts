export * from './gateway-heartbeat.ts';
