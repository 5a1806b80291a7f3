export * from './create-database.ts';
export { postgresText, type DirectPool, type DirectReads, type DirectStatement } from './direct-reads.ts';
export * from './ensure-database.ts';
export * from './migrate.ts';
export { sql } from 'slonik';
export * from './open-database.ts';
export * from './stored-secret.ts';
export * from './operator-user.ts';
