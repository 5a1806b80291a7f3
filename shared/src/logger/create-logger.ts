import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { loadPinoPretty, PRETTY_OPTIONS, type LogFormat } from './pretty.ts';

/**
 * Field names whose values never reach a log line, wherever they sit in the first three levels of a
 * logged object (including request and response headers).
 */
const SENSITIVE_NAMES = [
  'authorization',
  'cookie',
  'set-cookie',
  'x-pci-webhook-secret',
  'key',
  'apiKey',
  'api_key',
  'agentKey',
  'secret',
  'ingestSecret',
  'clientSecret',
  'client_secret',
  'token',
  'accessToken',
  'access_token',
  'refreshToken',
  'refresh_token',
  'code_verifier',
  'password',
  'credentials',
] as const;

function accessor(name: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(name) ? `.${name}` : `["${name}"]`;
}

export function redactionPaths(): string[] {
  const paths: string[] = [];
  for (const name of SENSITIVE_NAMES) {
    const tail = accessor(name);
    paths.push(tail.startsWith('.') ? tail.slice(1) : tail, `*${tail}`, `*.*${tail}`);
  }
  return paths;
}

export type LoggerDeps = {
  /** Service name stamped on every line. */
  name: string;
  /** Default `info`. */
  level?: LoggerOptions['level'];
  /** Where lines go; default standard output. Tests pass a capturing stream. */
  destination?: DestinationStream;
  /** Default `json`; `pretty` falls back to JSON when pino-pretty is not installed. */
  format?: LogFormat;
};

export function createLogger({ name, level = 'info', destination, format = 'json' }: LoggerDeps): Logger {
  const options: LoggerOptions = {
    name,
    level,
    redact: { paths: redactionPaths(), censor: '[redacted]' },
    base: { service: name },
  };
  const pretty = format === 'pretty' && !destination ? loadPinoPretty() : undefined;
  if (pretty) return pino(options, pretty.PinoPretty({ ...PRETTY_OPTIONS, colorize: Boolean(process.stdout.isTTY), sync: true }));
  return destination ? pino(options, destination) : pino(options);
}

export type { Logger } from 'pino';
