import type { DomainError, ErrorKind } from '../errors/index.ts';

/** The HTTP status each kind of domain error answers with: the one place a kind becomes a status. */
export const HTTP_STATUS_OF_KIND: Readonly<Record<ErrorKind, number>> = {
  invalid: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  unprocessable: 422,
  upstream: 502,
  unavailable: 503,
  timeout: 504,
};

/** A domain error as the Console port answers it: its status and the `{ error, code }` body. */
export function domainErrorAnswer(error: DomainError): { status: number; body: { error: string; code: string } } {
  return { status: HTTP_STATUS_OF_KIND[error.kind], body: { error: error.message, code: error.code } };
}
