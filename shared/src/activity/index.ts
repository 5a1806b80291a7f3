export * from './activity-rules.ts';
export * from './activity-rollup.ts';
export * from './connection-alerts.ts';
export * from './activity-deriver.ts';
export * from './activity-reads.ts';
export * from './alerts.ts';
export * from './notify-destination.ts';
export * from './alert-notifier.ts';
