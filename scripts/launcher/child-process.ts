import { spawn, type ChildProcess } from 'node:child_process';
import readline from 'node:readline';
import { z } from 'zod';
import { EXIT_NEEDS_OPERATOR } from '@pcg/shared/lifecycle';
import type { Logger } from '@pcg/shared/logger';

export type ChildSpec = {
  name: string;
  /** Entry file run with this launcher's own Node. */
  entry: string;
  env: NodeJS.ProcessEnv;
};

export type ChildEvents = {
  log: Logger;
  line(service: string, line: string, stream: 'stdout' | 'stderr'): void;
  ready(service: string): void;
  /** A (new) process runs the service. */
  spawned(): void;
  /** The child will not be restarted: a problem only the operator can fix, or too many crashes in a row. */
  gaveUp(service: string, reason: string): void;
};

const MIN_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 30_000;
/** A child that stayed up this long is healthy again: its next crash restarts it after the minimum wait. */
const HEALTHY_AFTER_MS = 30_000;
/** Crashes in a row, each before the child was healthy, after which the launcher gives up. */
export const MAX_QUICK_CRASHES = 5;

const FatalLineSchema = z.object({
  msg: z.string().optional(),
  fix: z.string().optional(),
  err: z.object({ message: z.string().optional() }).optional(),
});
type FatalLine = z.infer<typeof FatalLineSchema>;

/**
 * Keeps one service running: passes its output on, restarts it with exponential backoff when it crashes,
 * gives up after `MAX_QUICK_CRASHES` crashes in a row or at once when it exits with `EXIT_NEEDS_OPERATOR`,
 * and stops it with SIGTERM (then SIGKILL after `graceMs`) when asked.
 *
 * Each child gets its own process group, so a Ctrl-C in the terminal reaches only the launcher, which
 * stops the children once and in order; and an IPC channel, which the child watches so that it stops
 * by itself if the launcher is ever killed (no orphan).
 */
export class SupervisedChild {
  private child: ChildProcess | undefined;
  private stopping = false;
  private backoffMs = MIN_BACKOFF_MS;
  private quickCrashes = 0;
  private restartTimer: NodeJS.Timeout | undefined;
  private lastFatal: FatalLine | undefined;
  private readonly spec: ChildSpec;
  private readonly events: ChildEvents;

  constructor(spec: ChildSpec, events: ChildEvents) {
    this.spec = spec;
    this.events = events;
  }

  start(): void {
    const startedAt = Date.now();
    const { name } = this.spec;
    const child = spawn(process.execPath, [this.spec.entry], {
      env: this.spec.env,
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      detached: true,
    });
    this.child = child;
    this.events.spawned();
    const onLine = (stream: 'stdout' | 'stderr') => (line: string) => {
      this.events.line(name, line, stream);
      if (line.includes(`"msg":"${name} ready"`)) this.events.ready(name);
      if (line.includes('"level":60')) this.lastFatal = parseFatal(line);
    };
    if (child.stdout) readline.createInterface({ input: child.stdout }).on('line', onLine('stdout'));
    if (child.stderr) readline.createInterface({ input: child.stderr }).on('line', onLine('stderr'));
    child.on('error', (error) => this.events.log.error({ child: name, err: error.message }, 'a service could not be started'));
    child.on('exit', (code, signal) => {
      this.child = undefined;
      if (this.stopping) return;
      const status = signal ?? `status ${code}`;
      if (code === EXIT_NEEDS_OPERATOR) return this.events.gaveUp(name, `${name} cannot start: ${describeFatal(this.lastFatal)}`);
      if (Date.now() - startedAt > HEALTHY_AFTER_MS) {
        this.backoffMs = MIN_BACKOFF_MS;
        this.quickCrashes = 0;
      }
      this.quickCrashes += 1;
      if (this.quickCrashes >= MAX_QUICK_CRASHES) {
        return this.events.gaveUp(name, `${name} crashed ${this.quickCrashes} times in a row, each within ${HEALTHY_AFTER_MS / 1000} s of starting (last: ${status}); its lines above say why`);
      }
      this.events.log.warn({ child: name, exit: status, restartInMs: this.backoffMs }, `${name} exited; restarting it`);
      this.restartTimer = setTimeout(() => this.start(), this.backoffMs);
      this.backoffMs = Math.min(this.backoffMs * 2, MAX_BACKOFF_MS);
    });
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  async stop(graceMs = 10_000): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const killer = setTimeout(() => {
      this.events.log.warn({ child: this.spec.name, graceMs }, 'a service did not stop in time; killing it');
      child.kill('SIGKILL');
    }, graceMs);
    await exited;
    clearTimeout(killer);
  }
}

function parseFatal(line: string): FatalLine | undefined {
  try {
    return FatalLineSchema.safeParse(JSON.parse(line)).data;
  } catch {
    return undefined;
  }
}

function describeFatal(fatal: FatalLine | undefined): string {
  if (!fatal) return 'see its last lines above';
  const cause = fatal.err?.message ?? fatal.msg ?? 'see its last lines above';
  return fatal.fix ? `${cause}; ${fatal.fix}` : cause;
}
