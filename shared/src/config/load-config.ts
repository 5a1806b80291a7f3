import type { z } from 'zod';

export class ConfigError extends Error {
  readonly issues: readonly string[];

  constructor(issues: readonly string[]) {
    super(`invalid configuration:\n${issues.map((issue) => `  - ${issue}`).join('\n')}`);
    this.name = 'ConfigError';
    this.issues = issues;
  }
}

/**
 * Parses the environment once against a service's composed schema and freezes the result.
 * Every problem is reported with the variable's name, what was given and what is allowed.
 */
export function loadConfig<Schema extends z.ZodType>(
  schema: Schema,
  env: Record<string, string | undefined> = process.env,
): Readonly<z.output<Schema>> {
  // Empty strings mean "not set", as in most .env files.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
  const result = schema.safeParse(cleaned);
  if (!result.success) {
    throw new ConfigError(
      result.error.issues.map((issue) => {
        const name = issue.path.join('.') || '(environment)';
        const given = typeof issue.path[0] === 'string' ? cleaned[issue.path[0]] : undefined;
        return given === undefined ? `${name}: ${issue.message}` : `${name}=${JSON.stringify(given)}: ${issue.message}`;
      }),
    );
  }
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
