import type { z } from 'zod';
import { loadConfigOrExit } from '../config/index.ts';
import { createLogger, pickLogFormat, type LogFormat, type Logger } from '../logger/index.ts';
import { EXIT_NEEDS_OPERATOR, operatorFix } from './exit-status.ts';
import { closeOnSignals, type StoppableService } from './shutdown.ts';

export type ServiceMain<Schema extends z.ZodType, Running extends StoppableService> = {
  name: string;
  configSchema: Schema;
  start(config: Readonly<z.output<Schema>>, log: Logger): Promise<Running>;
  /** Fields of the one ready line, such as the address the service listens on. */
  readyFields(running: Running): Record<string, unknown>;
};

/**
 * A service's whole `main`: parse the configuration once (a bad value exits naming the variable),
 * start, log one ready line, and close gracefully on SIGTERM or SIGINT.
 */
export async function runService<Schema extends z.ZodType & { shape: { LOG_LEVEL: unknown } }, Running extends StoppableService>(
  main: ServiceMain<Schema, Running>,
): Promise<void> {
  const config = loadConfigOrExit(main.configSchema, main.name);
  const level = (config as { LOG_LEVEL?: string }).LOG_LEVEL ?? 'info';
  const format = pickLogFormat((config as { LOG_FORMAT?: LogFormat }).LOG_FORMAT);
  const log = createLogger({ name: main.name, level, format });
  try {
    const running = await main.start(config, log);
    closeOnSignals(running, log);
    log.info(main.readyFields(running), `${main.name} ready`);
  } catch (error) {
    // A restart cannot fix these: say what to do, and exit with the status the launcher does not restart.
    const fix = operatorFix(error);
    log.fatal({ err: error, ...(fix ? { fix } : {}) }, `${main.name} failed to start`);
    log.flush();
    process.exit(fix ? EXIT_NEEDS_OPERATOR : 1);
  }
}
