import type { Logger } from 'pino';

export type StoppableService = {
  /** Stops accepting work, finishes what is in flight, then releases pools and connections. */
  close(): Promise<void>;
};

/**
 * Wires SIGTERM and SIGINT to one graceful close. A second signal while closing exits at once
 * with status 1, so an operator is never stuck behind a hung shutdown. When started by the launcher
 * (an IPC channel is open), the channel closing means the launcher is gone: stop as on SIGTERM.
 */
export function closeOnSignals(service: StoppableService, log: Logger, graceMs = 25_000): void {
  let closing = false;
  const onSignal = (signal: NodeJS.Signals | 'launcher-gone') => {
    if (closing) {
      log.warn({ signal }, 'second signal while stopping, exiting now');
      process.exit(1);
    }
    closing = true;
    log.info({ signal }, 'stopping');
    const force = setTimeout(() => {
      log.error({ graceMs }, 'shutdown took too long, exiting');
      process.exit(1);
    }, graceMs);
    force.unref();
    service.close().then(
      () => {
        log.info('stopped');
        log.flush();
        process.exit(0);
      },
      (error: unknown) => {
        log.error({ err: error }, 'error while stopping');
        log.flush();
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  if (process.send) {
    // A launcher killed while this service was still starting closed the channel before anyone listened:
    // the 'disconnect' event is gone, so the state is read instead, or the service would outlive it.
    if (!process.connected) onSignal('launcher-gone');
    else
      process.once('disconnect', () => {
        if (!closing) onSignal('launcher-gone');
      });
  }
}
