import { ConflictError, ForbiddenError, NotFoundError, UpstreamError, ValidationError } from '../errors/index.ts';
import { objectsOfSector, offersActions, SECTORS, type Sector } from '../sectors/index.ts';
import { byCloseness, closestName } from './closest-names.ts';

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

/** What a refused target named: an object (the reads), an action, or a sector given on its own. */
export type Target = { kind: 'object' | 'action' | 'sector'; name: string };

const didYouMean = (candidate: string | undefined) => (candidate ? `; did you mean '${candidate}'?` : '');

/**
 * Spec 5 rule 3: a first word that is not a sector is refused (reason `unknown sector`), never mapped
 * onto a granted sector. The message only points the way on: the objects of the granted sectors for a
 * read, the form of action names for an action, and the likeliest meant name among what is granted.
 */
export function unknownSector(word: string, granted: readonly Sector[] = [], target?: Target): AccessDeniedError {
  let hint = '';
  if (target?.kind === 'action') {
    const acting = granted.filter(offersActions);
    const meant = acting.length > 0 && target.name.split('.').length === 2 ? `${acting[0]}.${target.name}` : undefined;
    hint = `; action names start with their sector (<sector>.<domain>.<service>) and list_actions names them${didYouMean(meant)}`;
  } else if (target?.kind === 'sector') {
    hint = didYouMean(closestName(target.name, granted));
  } else if (target) {
    const objects = granted.flatMap((sector) => objectsOfSector(sector).map((object) => object.name));
    if (objects.length > 0) hint = `; the objects you may read: ${objects.join(', ')}${didYouMean(closestName(target.name, objects))}`;
  }
  return new AccessDeniedError('unknown sector', `access denied: '${word}' is not a sector; the sectors are ${SECTORS.join(', ')}${hint}`);
}

/** An object name of a granted sector that the catalogue does not hold: the sector's objects, the likeliest first. */
export function unknownObject(name: string, sector: Sector): ValidationError {
  const valid = objectsOfSector(sector).map((candidate) => candidate.name);
  return new ValidationError(`unknown object '${name}'; objects in ${sector}: ${valid.join(', ')}${didYouMean(closestName(name, valid))}`);
}

/** At most this many action names are listed in an unknown action's message, the closest first. */
export const LISTED_ACTIONS_CAP = 20;

/** An action name no connection of the (granted) sector offers: the offered names, the closest first. */
export function unknownAction(name: string, sector: string, offered: readonly string[]): ValidationError {
  const base = `unknown action '${name}'; list_actions shows the actions ${sector} offers`;
  if (offered.length === 0) return new ValidationError(base);
  const listed = byCloseness(name, [...new Set(offered)]);
  const more = listed.length > LISTED_ACTIONS_CAP ? ` (and ${listed.length - LISTED_ACTIONS_CAP} more)` : '';
  return new ValidationError(`${base}: ${listed.slice(0, LISTED_ACTIONS_CAP).join(', ')}${more}${didYouMean(closestName(name, listed))}`);
}

export function sectorNotGranted(sector: string, granted: readonly string[]): AccessDeniedError {
  const held = granted.length > 0 ? granted.join(', ') : 'none';
  return new AccessDeniedError('sector not granted', `access denied: sector '${sector}' is not granted to this agent (granted: ${held})`, sector);
}

export const RECORD_NOT_FOUND = 'record not found';

/** An id no record of the object holds: `record not found` first, then where valid ids come from. */
export function recordNotFound(object: string, id: string, bareSector: boolean): NotFoundError {
  const where = bareSector ? `any ${object} object` : object;
  return new NotFoundError(
    `${RECORD_NOT_FOUND}: no record of ${where} has the id '${id}'. Ids are the id field of query rows (query {"object": "${bareSector ? `${object}.<object>` : object}", "select": ["id"]}); source_id is the provider's own id, not a gateway id.`,
  );
}
export const noActiveConnection = (sector: string) => new ConflictError(`no active connection for sector '${sector}'`);

export { ConflictError, NotFoundError, UpstreamError, ValidationError };
