import { environmentGates } from './gate-tags.ts';

/**
 * The environment gates by name, for code that must know at run time whether a program is there (a suite's
 * setup that starts Radicale only where it is installed). A test that needs one declares its tag
 * (`{ tags: ['needs-radicale'] }`) and vitest skips it where the gate is closed, its name unchanged; the
 * probes and the tag definitions live in gate-tags.ts, so a gate has one probe and one reason.
 */
export type Gate = { available: boolean; reason: string; tag: string };

const NAMES = {
  chattr: 'needs-chattr',
  radicale: 'needs-radicale',
  dovecot: 'needs-dovecot',
  chromium: 'needs-chromium',
  redisServer: 'needs-redis-server',
} as const;

export type GateName = keyof typeof NAMES;

let probed: Map<string, { open: boolean; reason: string }> | undefined;

function read(name: GateName): Gate {
  probed ??= new Map(environmentGates().map((gate) => [gate.name, gate]));
  const tag = NAMES[name];
  const found = probed.get(tag);
  if (found === undefined) throw new Error(`no environment gate ${tag} in gate-tags.ts`);
  return { available: found.open, reason: found.reason, tag };
}

/** Each gate, probed the first time one is read (once per test file). */
export const gates: Readonly<Record<GateName, Gate>> = {
  get chattr() {
    return read('chattr');
  },
  get radicale() {
    return read('radicale');
  },
  get dovecot() {
    return read('dovecot');
  },
  get chromium() {
    return read('chromium');
  },
  get redisServer() {
    return read('redisServer');
  },
};
