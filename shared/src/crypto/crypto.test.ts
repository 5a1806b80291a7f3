import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile, chmod } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createCapturingLogger } from '@pcg/testkit/testing';
import { CredentialsCipherError, openCredentials, sealCredentials } from './credentials-cipher.ts';
import { credentialsConfig, loadCredentialsKey } from './credentials-key.ts';
import { generateIngestSecret, hashIngestSecret, ingestSecretMatches, INGEST_SECRET_PREFIX } from './ingest-secret.ts';

const dirs: string[] = [];
const tempDir = async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'pcg-crypto-'));
  dirs.push(dir);
  return dir;
};
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

describe('credentials cipher (AES-256-GCM)', () => {
  const key = randomBytes(32);
  const value = { baseUrl: 'http://hub.lan:8123', token: 'long-lived' };

  it('round-trips a value and never stores it in clear', () => {
    const sealed = sealCredentials(key, value, 'conn-1');
    expect(sealed.includes(Buffer.from('long-lived'))).toBe(false);
    expect(openCredentials(key, sealed, 'conn-1')).toEqual(value);
  });

  it('uses a fresh IV every time', () => {
    expect(sealCredentials(key, value, 'c').equals(sealCredentials(key, value, 'c'))).toBe(false);
  });

  it('refuses a wrong key, another connection and a flipped bit alike', () => {
    const sealed = sealCredentials(key, value, 'conn-1');
    const flipped = Buffer.from(sealed);
    flipped[flipped.length - 1] = (flipped.at(-1) ?? 0) ^ 1;
    for (const attempt of [
      () => openCredentials(randomBytes(32), sealed, 'conn-1'),
      () => openCredentials(key, sealed, 'conn-2'),
      () => openCredentials(key, flipped, 'conn-1'),
    ]) {
      expect(attempt).toThrow(new CredentialsCipherError('sealed credentials do not open with this key'));
    }
    expect(() => openCredentials(key, Buffer.from([1, 2, 3]), 'conn-1')).toThrow('malformed');
  });
});

describe('ingest secret', () => {
  it('is 32 random bytes behind a recognisable prefix, stored as its SHA-256', () => {
    const { secret, hash } = generateIngestSecret();
    expect(secret.startsWith(INGEST_SECRET_PREFIX)).toBe(true);
    expect(Buffer.from(secret.slice(INGEST_SECRET_PREFIX.length), 'base64url')).toHaveLength(32);
    expect(hash).toHaveLength(32);
    expect(hash.equals(hashIngestSecret(secret))).toBe(true);
  });

  it('matches only the right secret and fails closed on a missing or wrong-length hash', () => {
    const { secret, hash } = generateIngestSecret();
    expect(ingestSecretMatches(secret, hash)).toBe(true);
    expect(ingestSecretMatches(`${secret}x`, hash)).toBe(false);
    expect(ingestSecretMatches(undefined, hash)).toBe(false);
    expect(ingestSecretMatches('', hashIngestSecret(''))).toBe(false);
    expect(ingestSecretMatches(secret, null)).toBe(false);
    expect(ingestSecretMatches(secret, hash.subarray(0, 31))).toBe(false);
    expect(ingestSecretMatches(secret, Buffer.concat([hash, Buffer.from([0])]))).toBe(false);
    // A stored hash of 32 zero bytes is what a refusal compares against; it must never match.
    expect(ingestSecretMatches(secret, Buffer.alloc(32))).toBe(false);
  });
});

describe('credentials key', () => {
  it('uses CREDENTIALS_KEY when set and refuses a key of the wrong size', async () => {
    const key = randomBytes(32);
    const settings = credentialsConfig.parse({ CREDENTIALS_KEY: key.toString('base64'), DATA_DIR: await tempDir() });
    expect((await loadCredentialsKey(settings)).equals(key)).toBe(true);
    expect(credentialsConfig.safeParse({ CREDENTIALS_KEY: randomBytes(16).toString('base64') }).success).toBe(false);
  });

  it('generates the key into the data directory with mode 0600 and finds the same one next time', async () => {
    const dir = path.join(await tempDir(), 'nested');
    const settings = credentialsConfig.parse({ DATA_DIR: dir });
    const first = await loadCredentialsKey(settings);
    const file = path.join(dir, 'credentials.key');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(Buffer.from(await readFile(file, 'utf8'), 'base64').equals(first)).toBe(true);
    expect((await loadCredentialsKey(settings)).equals(first)).toBe(true);
  });

  it('gives processes starting at once one key', async () => {
    const settings = credentialsConfig.parse({ DATA_DIR: await tempDir() });
    const keys = await Promise.all(Array.from({ length: 8 }, () => loadCredentialsKey(settings)));
    expect(new Set(keys.map((key) => key.toString('hex'))).size).toBe(1);
  });

  it('tightens a key file that others could read, and refuses a damaged one', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'credentials.key');
    await writeFile(file, randomBytes(32).toString('base64'));
    await chmod(file, 0o644);
    const { log, lines } = createCapturingLogger();
    await loadCredentialsKey(credentialsConfig.parse({ DATA_DIR: dir }), log);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(lines().join('\n')).toContain('restricting it to 0600');
    await writeFile(file, 'not a key');
    await expect(loadCredentialsKey(credentialsConfig.parse({ DATA_DIR: dir }))).rejects.toThrow('does not hold');
  });
});
