export * from './job-catalogue.ts';
export * from './queue-connections.ts';
export * from './job-requester.ts';
export * from './sync-producer.ts';
export * from './live-requester.ts';
export * from './sign-in-requester.ts';
export * from './check-requester.ts';
