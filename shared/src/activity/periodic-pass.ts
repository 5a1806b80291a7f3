import type { Logger } from '../logger/index.ts';

export type PeriodicPassDeps<Result> = {
  /** One pass; it may ask `stopped()` to end early when the owner is closing. */
  pass: (stopped: () => boolean) => Promise<Result>;
  everyMs: number;
  log: Logger;
  /** The warning logged when a pass fails; the next pass runs on the timer as usual. */
  failedText: string;
};

/**
 * A pass run now and then every `everyMs` after the last one ended, never two at once, with a timer that
 * keeps no process alive; `runOnce` joins a pass already running. The activity rollup and the alert
 * notifications each run on one.
 */
export function createPeriodicPass<Result>({ pass, everyMs, log, failedText }: PeriodicPassDeps<Result>) {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<Result> | undefined;
  let stopped = false;
  const isStopped = () => stopped;

  function runOnce(): Promise<Result> {
    running ??= pass(isStopped).finally(() => {
      running = undefined;
    });
    return running;
  }

  function runThenSchedule(): void {
    runOnce()
      .catch((error: unknown) => log.warn({ err: error }, failedText))
      .finally(schedule);
  }

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(runThenSchedule, everyMs);
    timer.unref();
  }

  return {
    runOnce,
    start(): void {
      stopped = false;
      runThenSchedule();
    },
    async close(): Promise<void> {
      stopped = true;
      clearTimeout(timer);
      await running?.catch(() => undefined);
    },
  };
}
