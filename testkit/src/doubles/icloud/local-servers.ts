import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestCertificates } from './test-ca.ts';

const RADICALE = '/usr/bin/radicale';
const DOVECOT = '/usr/sbin/dovecot';

/** Why a real-server test cannot run here, or undefined when it can (CI installs both: `.ci/run`). */
export const radicaleMissing = (): string | undefined => (existsSync(RADICALE) ? undefined : `Radicale is not installed (${RADICALE}); apt-get install radicale`);
export const dovecotMissing = (): string | undefined => (existsSync(DOVECOT) ? undefined : `Dovecot is not installed (${DOVECOT}); apt-get install dovecot-imapd`);

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function answers(port: number, deadlineMs: number, child?: ChildProcess): Promise<void> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    if (child && child.exitCode !== null) throw new Error(`the server exited with code ${child.exitCode}`);
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`nothing answered on port ${port} within ${deadlineMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export type LocalServer = { port: number; dir: string; stop(): Promise<void> };

/**
 * Radicale (CalDAV + CardDAV, RFC 6578 sync-collection) as a child process on a free port, with TLS from
 * the test CA's certificate and one htpasswd user. `options.port` fixes the port (the demo's).
 */
export async function startRadicale(certs: TestCertificates, user: { name: string; password: string }, options: { port?: number } = {}): Promise<LocalServer> {
  const dir = join(certs.dir, `radicale-${process.pid}-${Date.now()}`);
  mkdirSync(join(dir, 'collections'), { recursive: true });
  writeFileSync(join(dir, 'users'), `${user.name}:${user.password}\n`);
  const port = options.port ?? (await freePort());
  writeFileSync(
    join(dir, 'config'),
    [
      '[server]', `hosts = 127.0.0.1:${port}`, 'ssl = True', `certificate = ${join(certs.dir, 'cert.pem')}`, `key = ${join(certs.dir, 'key.pem')}`,
      '[auth]', 'type = htpasswd', `htpasswd_filename = ${join(dir, 'users')}`, 'htpasswd_encryption = plain', 'delay = 0',
      '[storage]', `filesystem_folder = ${join(dir, 'collections')}`,
      '[logging]', 'level = warning',
    ].join('\n'),
  );
  return runServer('Radicale', RADICALE, ['--config', join(dir, 'config')], port, dir);
}

/**
 * Dovecot (IMAP over implicit TLS, CONDSTORE offered) with its own config and state directories, on a free
 * port (or `options.port`), one passwd-file user whose mail lives under `dir`. Runs in the foreground as a child process.
 */
export async function startDovecot(certs: TestCertificates, user: { name: string; password: string }, options: { port?: number } = {}): Promise<LocalServer> {
  // Not under the CA's folder (0700, root's): Dovecot's auth and mail processes run as nobody and must reach this one.
  const dir = mkdtempSync(join(tmpdir(), 'pcg-dovecot-'));
  chmodSync(dir, 0o755);
  const mail = join(dir, 'mail', user.name);
  mkdirSync(join(dir, 'run'), { recursive: true });
  mkdirSync(mail, { recursive: true });
  const ids = spawnSync('id', ['-u', 'nobody'], { encoding: 'utf8' }).stdout.trim();
  const gid = spawnSync('id', ['-g', 'nobody'], { encoding: 'utf8' }).stdout.trim();
  spawnSync('chown', ['-R', `${ids}:${gid}`, join(dir, 'mail')]);
  writeFileSync(join(dir, 'passwd'), `${user.name}:{PLAIN}${user.password}:${ids}:${gid}::${mail}\n`);
  const port = options.port ?? (await freePort());
  const config = join(dir, 'dovecot.conf');
  writeFileSync(
    config,
    [
      `base_dir = ${join(dir, 'run')}`,
      `state_dir = ${join(dir, 'run')}`,
      `log_path = ${join(dir, 'log')}`,
      'protocols = imap',
      'listen = 127.0.0.1',
      'service imap-login {',
      '  inet_listener imap {',
      '    port = 0',
      '  }',
      '  inet_listener imaps {',
      `    port = ${port}`,
      '    ssl = yes',
      '  }',
      '}',
      'ssl = required',
      `ssl_cert = <${join(certs.dir, 'cert.pem')}`,
      `ssl_key = <${join(certs.dir, 'key.pem')}`,
      'auth_mechanisms = plain login',
      'auth_failure_delay = 0',
      // No growing delay after refused logins from 127.0.0.1 (Dovecot's auth penalty): tests refuse on purpose.
      'service anvil {', '  unix_listener anvil-auth-penalty {', '    mode = 0', '  }', '}',
      'passdb {', '  driver = passwd-file', `  args = ${join(dir, 'passwd')}`, '}',
      'userdb {', '  driver = passwd-file', `  args = ${join(dir, 'passwd')}`, '}',
      'mail_location = maildir:~/Maildir',
      'default_internal_user = nobody',
      'default_login_user = nobody',
    ].join('\n'),
  );
  return runServer('Dovecot', DOVECOT, ['-F', '-c', config], port, dir);
}

/** Runs a server binary as a child, waits until its port answers, and gives the handle that stops it and removes `dir`. */
async function runServer(name: string, command: string, args: string[], port: number, dir: string): Promise<LocalServer> {
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  try {
    await answers(port, 15_000, child);
  } catch (error) {
    child.kill('SIGKILL');
    throw new Error(`${name} did not start: ${(error as Error).message}\n${stderr}`, { cause: error });
  }
  return {
    port,
    dir,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
