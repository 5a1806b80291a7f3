import { createLogger, createPrettyFormatter, type LogFormat, type Logger } from '@pcg/shared/logger';

export type LauncherOutput = {
  /** The launcher's own lines. */
  log: Logger;
  /** One line a service wrote: JSON lines pass through (or are made pretty); anything else is wrapped. */
  serviceLine(service: string, line: string, stream: 'stdout' | 'stderr'): void;
};

const LEVELS = { info: 30, warn: 40 } as const;

/**
 * Everything the launcher prints is one stream of log events: pino JSON (each with its `service` field)
 * when the output goes to a file or another program, or pino-pretty's one line an event, in local time,
 * on a terminal.
 */
export function createLauncherOutput(format: LogFormat, level: string): LauncherOutput {
  const pretty = format === 'pretty' ? createPrettyFormatter(Boolean(process.stdout.isTTY)) : undefined;
  // After the terminal closed (SIGHUP), writing fails; the stop must go on regardless.
  process.stdout.on('error', () => undefined);
  process.stderr.on('error', () => undefined);
  const emit = (json: string) => {
    if (process.stdout.writable) process.stdout.write(pretty ? pretty(json) : json.endsWith('\n') ? json : `${json}\n`);
  };
  const log = createLogger({ name: 'launcher', level, destination: { write: emit } });
  return {
    log,
    serviceLine(service, line, stream) {
      if (line.startsWith('{')) {
        try {
          JSON.parse(line);
          emit(line);
          return;
        } catch {
          // not JSON after all: wrapped below
        }
      }
      emit(JSON.stringify({ level: LEVELS[stream === 'stderr' ? 'warn' : 'info'], time: Date.now(), service, msg: line }));
    },
  };
}
