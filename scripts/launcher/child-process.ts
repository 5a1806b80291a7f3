import { spawn, type ChildProcess } from 'node:child_process';
import readline from 'node:readline';

export type ChildSpec = {
  name: string;
  /** Entry file run with this launcher's own Node. */
  entry: string;
  env: NodeJS.ProcessEnv;
};

type Output = (line: string) => void;

const MIN_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 30_000;
/** A child that stayed up this long is healthy again: its next crash restarts it after the minimum wait. */
const HEALTHY_AFTER_MS = 30_000;

/**
 * Keeps one service running: prefixes its output, restarts it with exponential backoff when it exits
 * on its own, and stops it with SIGTERM (then SIGKILL after `graceMs`) when asked.
 *
 * Each child gets its own process group, so a Ctrl-C in the terminal reaches only the launcher, which
 * stops the children once and in order; and an IPC channel, which the child watches so that it stops
 * by itself if the launcher is ever killed (no orphan).
 */
export class SupervisedChild {
  private child: ChildProcess | undefined;
  private stopping = false;
  private backoffMs = MIN_BACKOFF_MS;
  private restartTimer: NodeJS.Timeout | undefined;
  private readonly spec: ChildSpec;
  private readonly out: Output;

  constructor(spec: ChildSpec, out: Output) {
    this.spec = spec;
    this.out = out;
  }

  start(): void {
    const startedAt = Date.now();
    const child = spawn(process.execPath, [this.spec.entry], {
      env: this.spec.env,
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      detached: true,
    });
    this.child = child;
    const prefix = `[${this.spec.name}]`;
    for (const stream of [child.stdout, child.stderr]) {
      if (stream) readline.createInterface({ input: stream }).on('line', (line) => this.out(`${prefix} ${line}`));
    }
    child.on('error', (error) => this.out(`${prefix} could not start: ${error.message}`));
    child.on('exit', (code, signal) => {
      this.child = undefined;
      if (this.stopping) return;
      if (Date.now() - startedAt > HEALTHY_AFTER_MS) this.backoffMs = MIN_BACKOFF_MS;
      this.out(`[launcher] ${this.spec.name} exited (${signal ?? `status ${code}`}); restarting in ${this.backoffMs} ms`);
      this.restartTimer = setTimeout(() => this.start(), this.backoffMs);
      this.backoffMs = Math.min(this.backoffMs * 2, MAX_BACKOFF_MS);
    });
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  async stop(graceMs = 30_000): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const killer = setTimeout(() => {
      this.out(`[launcher] ${this.spec.name} did not stop within ${graceMs} ms; killing it`);
      child.kill('SIGKILL');
    }, graceMs);
    await exited;
    clearTimeout(killer);
  }
}
