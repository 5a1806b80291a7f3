/** One answer of the Console as a test reads it: the status, the headers and the JSON body (`{}` when empty). */
export type ConsoleAnswer = { status: number; headers: Headers; body: Record<string, unknown> };

/**
 * A request sender for a Console at `base()` (read at each call, so a test can make it before the
 * Console has started): JSON in and out, redirects not followed.
 */
export function consoleSender(base: () => string) {
  return async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ConsoleAnswer> => {
    const answer = await fetch(`${base()}${path}`, {
      method,
      redirect: 'manual',
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await answer.text();
    return { status: answer.status, headers: answer.headers, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
  };
}
