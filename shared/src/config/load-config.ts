import type { z } from 'zod';

export class ConfigError extends Error {
  readonly issues: readonly string[];

  constructor(issues: readonly string[]) {
    super(`invalid configuration:\n${issues.map((issue) => `  - ${issue}`).join('\n')}`);
    this.name = 'ConfigError';
    this.issues = issues;
  }
}

/** A setting whose value is a secret: its value never goes into a message, only its name. */
export const isSecretSetting = (name: string): boolean => name === 'CREDENTIALS_KEY' || /(^|_)(SECRET|TOKEN|KEY|PASSWORD)$/.test(name);

/** How a given value may be shown: a secret setting's not at all, a URL's without its password. */
function shownValue(name: string, value: string): string | undefined {
  if (isSecretSetting(name)) return undefined;
  if (URL.canParse(value)) {
    const url = new URL(value);
    if (url.password !== '') {
      url.password = '***';
      return url.href;
    }
  }
  return value;
}

// Empty strings mean "not set", as in most .env files.
const setOnly = (env: Record<string, string | undefined>) =>
  Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== ''));

/**
 * Every problem the schema finds in the environment, one line each: the variable's name, what was given
 * (never a secret's value, nor a URL's password) and what is allowed.
 */
export function configIssues(schema: z.ZodType, env: Record<string, string | undefined> = process.env): string[] {
  const cleaned = setOnly(env);
  const result = schema.safeParse(cleaned);
  if (result.success) return [];
  return result.error.issues.map((issue) => {
    const name = issue.path.join('.') || '(environment)';
    const given = typeof issue.path[0] === 'string' ? cleaned[issue.path[0]] : undefined;
    const shown = given === undefined ? undefined : shownValue(name, given);
    return shown === undefined ? `${name}: ${issue.message}` : `${name}=${JSON.stringify(shown)}: ${issue.message}`;
  });
}

/**
 * Parses the environment once against a service's composed schema and freezes the result.
 * Every problem is reported as `configIssues` words it.
 */
export function loadConfig<Schema extends z.ZodType>(
  schema: Schema,
  env: Record<string, string | undefined> = process.env,
): Readonly<z.output<Schema>> {
  const result = schema.safeParse(setOnly(env));
  if (!result.success) throw new ConfigError(configIssues(schema, env));
  return Object.freeze(result.data);
}

/** For a service's main: parse or print the problems and exit with status 1. */
export function loadConfigOrExit<Schema extends z.ZodType>(
  schema: Schema,
  serviceName: string,
  env: Record<string, string | undefined> = process.env,
): Readonly<z.output<Schema>> {
  try {
    return loadConfig(schema, env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`[${serviceName}] ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
}
