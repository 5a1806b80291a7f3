export * from './sign-ins-types.ts';
export * from './sign-ins-queries.ts';
export * from './apply-grant.ts';
