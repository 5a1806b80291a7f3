import { ConflictError, ForbiddenError, NotFoundError, UpstreamError, ValidationError } from '../http/index.ts';

/**
 * A refusal: the call is not allowed (audited as `deny` with `denyReason`). Raised before any SQL,
 * queue job or upstream call.
 */
export class AccessDeniedError extends ForbiddenError {
  readonly denyReason: string;
  /** The sector the refused call targeted, for the audit row; null when it named no real sector. */
  readonly sector: string | null;
  constructor(denyReason: string, message: string, sector: string | null = null) {
    super(message);
    this.denyReason = denyReason;
    this.sector = sector;
  }
}

export function expiredKey(): AccessDeniedError {
  return new AccessDeniedError('expired', 'access denied: expired');
}

export function unknownSector(name: string): AccessDeniedError {
  return new AccessDeniedError('unknown sector', `access denied: '${name}' is not a sector; the sectors are finance, health, mail, contacts, calendar, home`);
}

export function sectorNotGranted(sector: string, granted: readonly string[]): AccessDeniedError {
  const held = granted.length > 0 ? granted.join(', ') : 'none';
  return new AccessDeniedError('sector not granted', `access denied: sector '${sector}' is not granted to this agent (granted: ${held})`, sector);
}

export const RECORD_NOT_FOUND = 'record not found';
export const noActiveConnection = (sector: string) => new ConflictError(`no active connection for sector '${sector}'`);
/** fetch_live on an object whose every active source pushes its data (a phone posting exports). */
export const pushedOnly = (object: string) => new ValidationError(`${object} cannot be read live: its sources push their data; use query`);

export { ConflictError, NotFoundError, UpstreamError, ValidationError };
