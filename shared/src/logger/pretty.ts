import { createRequire } from 'node:module';
import type { DestinationStream } from 'pino';

export type LogFormat = 'pretty' | 'json';

/** The format asked for, else pretty when the output is a terminal (a person reads it), else JSON. */
export function pickLogFormat(asked: LogFormat | undefined, isTerminal = Boolean(process.stdout.isTTY)): LogFormat {
  return asked ?? (isTerminal ? 'pretty' : 'json');
}

/** One line an event, local time, the service name in brackets (a field in the JSON, never a prefix). */
export const PRETTY_OPTIONS = {
  translateTime: 'SYS:HH:MM:ss.l',
  ignore: 'pid,hostname,name,service',
  messageFormat: '[{service}] {msg}',
  singleLine: true,
} as const;

type PinoPrettyModule = {
  prettyFactory(options: Record<string, unknown>): (line: string | object) => string;
  PinoPretty(options: Record<string, unknown>): DestinationStream;
};

/**
 * pino-pretty, when installed: it is a development tool (the container image leaves it out, and logs JSON).
 * Loaded on demand so that a production install never needs it.
 */
export function loadPinoPretty(): PinoPrettyModule | undefined {
  try {
    return createRequire(import.meta.url)('pino-pretty') as PinoPrettyModule;
  } catch {
    return undefined;
  }
}

/** A formatter of one JSON log line into its pretty form; `undefined` when pino-pretty is not installed. */
export function createPrettyFormatter(colorize: boolean): ((line: string | object) => string) | undefined {
  return loadPinoPretty()?.prettyFactory({ ...PRETTY_OPTIONS, colorize });
}
