import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type TestCertificates = {
  /** The test CA's certificate (PEM): what a client is told to trust. */
  ca: string;
  /** A server certificate for `names`, signed by the CA, and its key (PEM); also written to `dir`. */
  cert: string;
  key: string;
  /** Holds ca.pem, cert.pem and key.pem for servers that read files (Radicale, Dovecot). */
  dir: string;
  dispose(): void;
};

/**
 * A throw-away CA and one server certificate for the given DNS names, made with the system's openssl.
 * Clients trust the CA through their TLS options; nothing turns verification off.
 */
export function createTestCertificates(names: readonly string[]): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'pcg-test-ca-'));
  const run = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  run('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca-key.pem', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=pcg test CA');
  run('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'key.pem', '-out', 'server.csr', '-subj', `/CN=${names[0] ?? 'localhost'}`);
  writeFileSync(join(dir, 'ext.cnf'), `subjectAltName=${names.map((name) => `DNS:${name}`).join(',')}\nextendedKeyUsage=serverAuth\n`);
  run('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca-key.pem', '-CAcreateserial', '-out', 'cert.pem', '-days', '2', '-extfile', 'ext.cnf');
  return {
    ca: readFileSync(join(dir, 'ca.pem'), 'utf8'),
    cert: readFileSync(join(dir, 'cert.pem'), 'utf8'),
    key: readFileSync(join(dir, 'key.pem'), 'utf8'),
    dir,
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
}
