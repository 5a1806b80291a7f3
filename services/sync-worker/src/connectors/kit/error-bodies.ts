/**
 * Readers for the error bodies the providers send (reference/providers.md): Google's
 * `{error:{status, errors:[{reason}], details:[{reason}]}}`, Graph's `{error:{code}}`, Plaid's
 * `{error_type, error_code}`, an OAuth token endpoint's `{error: "invalid_grant"}` and the hub's
 * `{message}`. Anything else yields no reason; classifiers then decide on the status alone.
 */

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

const record = (value: unknown): Record<string, unknown> | undefined =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
const text = (value: unknown): string[] => (typeof value === 'string' && value.length > 0 ? [value] : []);

/** Every machine-readable reason or code an error body carries, in the order found. */
export function errorReasons(body: string): string[] {
  const json = record(parseJson(body));
  if (!json) return [];
  const reasons: string[] = [...text(json.error_code), ...text(json.error_type)];
  const error = json.error;
  if (typeof error === 'string') reasons.push(error);
  const nested = record(error);
  if (nested) {
    reasons.push(...text(nested.code), ...text(nested.status));
    for (const list of [nested.errors, nested.details]) {
      if (!Array.isArray(list)) continue;
      for (const item of list) reasons.push(...text(record(item)?.reason));
    }
  }
  return reasons;
}

/** A short, printable detail of an error body: its message, or the first line of text; at most 200 characters. */
export function errorDetail(body: string): string {
  const json = record(parseJson(body));
  const nested = record(json?.error);
  const message = [json?.message, json?.error_message, nested?.message, json?.error_description].find((value) => typeof value === 'string');
  if (typeof message === 'string') return message.slice(0, 200);
  if (json) return '';
  return body.split('\n')[0]?.slice(0, 200) ?? '';
}
