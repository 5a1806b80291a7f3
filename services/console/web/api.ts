/** The Console's own routes, called with JSON bodies only (the admin routes take nothing else). */
export class ApiError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

export type Answer<T> = { status: number; body: T; headers: Headers };

async function messageOf(response: Response): Promise<string> {
  const text = await response.text();
  try {
    const parsed = JSON.parse(text) as { error?: unknown; message?: unknown };
    if (typeof parsed.error === 'string') return parsed.error;
    if (typeof parsed.message === 'string') return parsed.message;
  } catch {
    // not JSON: the status says it
  }
  return `${response.status} ${response.statusText}`.trim();
}

export async function call(method: string, path: string, body?: unknown): Promise<Response> {
  const response = await fetch(path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
    cache: 'no-store',
  });
  if (!response.ok) throw new ApiError(response.status, await messageOf(response));
  return response;
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await call(method, path, body);
  if (response.status === 204) return undefined as T;
  return (await response.json()) as T;
}

export async function apiWithHeaders<T>(method: string, path: string): Promise<Answer<T>> {
  const response = await call(method, path);
  return { status: response.status, body: (await response.json()) as T, headers: response.headers };
}

export const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** Saves text as a file the browser downloads; the data never leaves the page. */
export function download(filename: string, text: string, type: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const link = document.createElement('a');
  link.href = url;
  link.download = filename;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
