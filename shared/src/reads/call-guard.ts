import { randomUUID } from 'node:crypto';
import type { AuditRecorder } from '../audit/index.ts';
import { OPERATOR_AGENT_ID } from '../audit/index.ts';
import { DomainError } from '../errors/index.ts';
import type { Logger } from '../logger/index.ts';
import { isSector, SECTORS, type Sector } from '../sectors/index.ts';
import { isDataException } from '../query/index.ts';
import { AccessDeniedError, expiredKey, sectorNotGranted, unknownSector, UpstreamError, ValidationError, type Target } from './reads-errors.ts';
import type { Caller } from './reads-types.ts';

export type CallGuardDeps = { audit: AuditRecorder; log: Logger; now?: () => Date };

/** What a call produced; `outcome: 'error'` marks an ordinary result that still failed (a source's ok: false). */
export type Outcome = { result: unknown; count: number; outcome?: 'ok' | 'error' };

export function grantedSectors(caller: Caller): readonly Sector[] {
  return caller.kind === 'operator' ? SECTORS : caller.grant.sectors;
}

/**
 * The checks and the audit row every agent call goes through, whichever tool or route it came from:
 * the key's deadline (checked on every call), the sector (before any SQL, queue job or upstream call),
 * then exactly one audit row — allow, deny with its reason, or allow with outcome error.
 */
export function createCallGuard(deps: CallGuardDeps) {
  const now = deps.now ?? (() => new Date());

  /** The sector a name targets by its first word; refused unless it is one of the six and granted. */
  function checkSector(caller: Caller, name: string, kind: Target['kind'] = 'object'): Sector {
    const sector = name.split('.')[0] ?? '';
    if (!isSector(sector)) throw unknownSector(sector, grantedSectors(caller), { kind, name });
    if (!grantedSectors(caller).includes(sector)) throw sectorNotGranted(sector, grantedSectors(caller));
    return sector;
  }

  async function audited(
    caller: Caller,
    tool: string,
    args: unknown,
    sectorOf: () => string | null,
    run: (sector: string | null) => Promise<Outcome>,
    options: { auditOperator?: boolean } = {},
  ): Promise<unknown> {
    const record = (decision: 'allow' | 'deny', outcome: 'ok' | 'error', sector: string | null, extra: { denyReason?: string; resultCount?: number } = {}) => {
      if (caller.kind === 'operator' && !options.auditOperator) return;
      deps.audit.record({
        agentId: caller.kind === 'agent' ? caller.grant.agentName : OPERATOR_AGENT_ID,
        tool,
        sector,
        decision,
        denyReason: extra.denyReason ?? null,
        args,
        resultCount: extra.resultCount ?? 0,
        outcome,
        requestId: caller.requestId ?? randomUUID(),
      });
    };
    let sector: string | null = null;
    try {
      if (caller.kind === 'agent' && caller.grant.expiresAt !== null && Date.parse(caller.grant.expiresAt) <= now().getTime()) throw expiredKey();
      sector = sectorOf();
      const { result, count, outcome = 'ok' } = await run(sector);
      record('allow', outcome, sector, { resultCount: count });
      return result;
    } catch (error) {
      if (error instanceof AccessDeniedError) {
        // An unknown first word is not a sector, so it never lands in the sector column.
        record('deny', 'error', error.sector ?? sector, { denyReason: error.denyReason });
        throw error;
      }
      record('allow', 'error', sector);
      if (error instanceof DomainError) throw error;
      // A value the database refused is the caller's to fix, not a failure to retry (the engine names the field).
      if (isDataException(error)) throw new ValidationError(`${tool}: the database cannot use a value given here; check it against get_schema`);
      deps.log.error({ err: error, tool }, 'call failed');
      throw new UpstreamError(`${tool} failed; try again later`);
    }
  }

  return { audited, checkSector, now };
}

export type CallGuard = ReturnType<typeof createCallGuard>;
