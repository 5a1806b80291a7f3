/**
 * The environment gates of the test suites, as vitest tags: a test or suite that needs something this
 * machine may lack declares the tag (`{ tags: ['needs-radicale'] }`), and vitest skips it where the probe
 * finds the thing missing. The requirements map reporter accepts a skip only through one of these tags, and
 * lists every test a closed gate skipped with the gate's reason (its description).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestTagDefinition } from 'vitest/config';

const root = path.resolve(import.meta.dirname, '../..');

const onPath = (command: string, ...args: string[]) => spawnSync(command, args, { stdio: 'ignore' }).status === 0;

/** `chattr +i` needs a file system with attributes and CAP_LINUX_IMMUTABLE, which containers often lack. */
function immutableFlagWorks(): boolean {
  const folder = mkdtempSync(path.join(os.tmpdir(), 'pcg-chattr-'));
  try {
    if (spawnSync('chattr', ['+i', folder], { stdio: 'ignore' }).status !== 0) return false;
    spawnSync('chattr', ['-i', folder], { stdio: 'ignore' });
    return true;
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

type Gate = { name: string; open: boolean; reason: string };

function gate(name: string, open: boolean, reason: string): Gate {
  return { name, open, reason };
}

export function environmentGates(): Gate[] {
  return [
    gate('needs-radicale', existsSync('/usr/bin/radicale') || onPath('radicale', '--version'), 'Radicale is not installed (apt-get install radicale)'),
    gate('needs-dovecot', existsSync('/usr/sbin/dovecot'), 'Dovecot is not installed (apt-get install dovecot-imapd)'),
    gate('needs-redis-server', onPath('redis-server', '--version'), 'redis-server is not on the PATH (apt-get install redis-server)'),
    gate('needs-chattr', immutableFlagWorks(), 'chattr +i does not work here (no attribute support or no CAP_LINUX_IMMUTABLE)'),
    gate('needs-chromium', existsSync('/usr/bin/chromium'), 'Chromium is not installed (/usr/bin/chromium; apt-get install chromium)'),
    gate('needs-shared-spec', existsSync(path.join(root, '../shared/spec/gateway-interface.md')), 'no shared specification beside the repository (../shared/spec)'),
    gate('does-not-apply', false, 'the contract case does not apply to this provider'),
  ];
}

/** The gates as vitest tag definitions: a closed gate skips every test that carries its tag. */
export function gateTags(): TestTagDefinition[] {
  return environmentGates().map(({ name, open, reason }) => ({ name, description: reason, skip: !open }));
}
