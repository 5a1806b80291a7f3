export * from './credentials-cipher.ts';
export * from './credentials-key.ts';
export * from './ingest-secret.ts';
