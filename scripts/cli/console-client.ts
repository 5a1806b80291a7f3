import { CommandFailed } from './cli-errors.ts';

/** The Console's address: `--console`, else `PCG_CONSOLE_URL`, else 127.0.0.1 on `REST_PORT` (default 8787). */
export function consoleUrl(env: NodeJS.ProcessEnv, flag: string | undefined): string {
  const given = flag ?? env.PCG_CONSOLE_URL;
  if (given) return given.replace(/\/+$/, '');
  // The Console accepts only local Host names (spec 5); a wildcard bind is still reached on loopback.
  const host = env.BIND_HOST && !['0.0.0.0', '::', '[::]'].includes(env.BIND_HOST) ? env.BIND_HOST : '127.0.0.1';
  return `http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${env.REST_PORT || 8787}`;
}

export type ConsoleAnswer = { status: number; headers: Headers; body: unknown };

export type ConsoleClient = {
  readonly base: string;
  /** Answers any status; refuses (CommandFailed) only when no Console answers. */
  call(method: string, path: string, body?: unknown): Promise<ConsoleAnswer>;
  /** `call`, turning a non-2xx answer into CommandFailed with the Console's own error text. */
  ok(method: string, path: string, body?: unknown): Promise<ConsoleAnswer>;
};

export const noConsoleMessage = (base: string, cause: string) =>
  `no Console answers at ${base} (${cause}); start it with \`npm start\`, or point pcg at it with --console <url> or REST_PORT`;

export function createConsoleClient(base: string, timeoutMs = 30_000): ConsoleClient {
  async function call(method: string, path: string, body?: unknown): Promise<ConsoleAnswer> {
    let response: Response;
    try {
      response = await fetch(`${base}${path}`, {
        method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      const { cause } = error as { cause?: { code?: string; message?: string } };
      const reason = cause?.code ?? cause?.message ?? (error as Error).message;
      throw new CommandFailed(noConsoleMessage(base, reason));
    }
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // A non-JSON answer (not the Console, or a proxy page) is shown as text.
    }
    return { status: response.status, headers: response.headers, body: parsed };
  }
  return {
    base,
    call,
    async ok(method, path, body) {
      const answer = await call(method, path, body);
      if (answer.status >= 200 && answer.status < 300) return answer;
      const error = (answer.body as { error?: unknown } | null)?.error;
      const text = typeof error === 'string' ? error : typeof answer.body === 'string' ? answer.body.slice(0, 300) : JSON.stringify(answer.body);
      throw new CommandFailed(`the Console answered ${answer.status}: ${text}`);
    },
  };
}
