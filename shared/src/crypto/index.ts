export * from './credentials-cipher.ts';
export * from './credentials-key.ts';
export * from './ingest-secret.ts';
export * from './audit-chain-key.ts';
export * from './secret-digest.ts';
