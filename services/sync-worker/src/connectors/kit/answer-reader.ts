/** Default cap on one answer a source client reads: far above any page the connectors ask for, far below what would exhaust the worker. */
export const DEFAULT_MAX_ANSWER_BYTES = 64 * 1024 * 1024;

/** An answer larger than the cap; the caller words the error for its source. */
export class AnswerTooLargeError extends Error {}

export function describeBytes(bytes: number): string {
  if (bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

/**
 * Reads an answer's body as UTF-8 text, as `response.text()` does, but stops at `maxBytes`: a declared
 * `content-length` above it is refused before reading, and a body that streams past it is cancelled.
 */
export async function readCappedText(response: Response, maxBytes: number): Promise<string> {
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    throw new AnswerTooLargeError();
  }
  if (!response.body) return '';
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let read = 0;
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text + decoder.decode();
    read += value.byteLength;
    if (read > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw new AnswerTooLargeError();
    }
    text += decoder.decode(value, { stream: true });
  }
}
