import type { DatabasePool } from 'slonik';
import type { z } from 'zod';
import type { AuditRecorder } from '../audit/index.ts';
import type { LiveRequester } from '../live/index.ts';
import type { Logger } from '../logger/index.ts';
import { BUCKETS, describeZodError, FILTER_OPS, localDate, RELATIVE_DATES, RELATIVE_DATES_DOC, type QueryEngine, type QueryResult } from '../query/index.ts';
import { createTimeZoneReader, type PersonTimeZone } from '../settings/index.ts';
import { CATALOGUE, findObject, isSector, objectsOfSector, type ObjectDef, type Sector } from '../sectors/index.ts';
import { createCallGuard, grantedSectors } from './call-guard.ts';
import { recordNotFound, unknownObject, unknownSector, ValidationError } from './reads-errors.ts';
import { connectionHealth, dataAgeSeconds } from '../connections/index.ts';
import { fetchLiveRows, type FetchLiveResult } from './live-reads.ts';
import { liveNote } from './live-notes.ts';
import { knownValues } from './known-values.ts';
import { connectionsInSectors } from './reads-queries.ts';
import {
  FetchLiveInputSchema,
  GetRecordInputSchema,
  GetSchemaInputSchema,
  type Caller,
  type ConnectionSummary,
  type DescribeContextResult,
} from './reads-types.ts';

export type ReadServiceDeps = {
  db: DatabasePool;
  engine: QueryEngine;
  audit: AuditRecorder;
  log: Logger;
  serviceName: string;
  /** Absent until the live queue is wired; fetch_live then fails with a clear message. */
  live?: LiveRequester;
  now?: () => Date;
  /** The person's time zone; default: the saved setting, else a connected hub's zone, else the machine's. */
  timeZone?: () => Promise<PersonTimeZone>;
};

/**
 * Spec 2.1: each finance connection's health, its reason, and the date that bank's consent expires when
 * the provider reports one, as notes of the finance objects (so an agent reading the schema sees them).
 */
function financeConnectionNotes(rows: ReadonlyArray<Parameters<typeof connectionHealth>[0] & { id: string; provider: string; consent_expires_at: string | null }>, at: Date): string[] {
  return rows.map((row) => {
    const health = connectionHealth(row, at);
    const reason = health !== 'ok' && row.last_error ? ` (${row.last_error})` : '';
    const consent = row.consent_expires_at ? `; the bank's consent expires ${row.consent_expires_at.slice(0, 10)}` : '';
    return `Finance connection ${row.id} (${row.provider}): health ${health}${reason}${consent}.`;
  });
}

/** The answer to a query whose input is missing or not a JSON object (a bare `null`, a list, a string). */
export const QUERY_BODY_EXPECTED = 'query: send a JSON object naming the object to read, e.g. {"object": "finance.transaction", "limit": 10}';

/**
 * The five reads (design 4.3) behind both the MCP tools and the REST mirror, so neither has logic of
 * its own. Each checks the key's deadline and the sector before any SQL or upstream call, and leaves
 * exactly one audit row per agent call: allow, deny with its reason, or allow with outcome error.
 */
export function createReadService(deps: ReadServiceDeps) {
  const { audited, checkSector, now } = createCallGuard(deps);
  const personZone = deps.timeZone ?? createTimeZoneReader(deps.db);

  function objectOf(name: string, sector: Sector): ObjectDef {
    const object = findObject(name);
    if (!object) throw unknownObject(name, sector);
    return object;
  }

  function parse<T>(schema: z.ZodType<T>, input: unknown): T {
    const parsed = schema.safeParse(input ?? {});
    if (!parsed.success) throw new ValidationError(describeZodError(parsed.error));
    return parsed.data;
  }

  const targetOf = (caller: Caller, input: unknown) => () => {
    const object = (input as { object?: unknown } | null)?.object;
    return typeof object === 'string' ? checkSector(caller, object) : null;
  };

  return {
    describeContext(caller: Caller): Promise<DescribeContextResult> {
      return audited(caller, 'describe_context', {}, () => null, async () => {
        const sectors = [...grantedSectors(caller)];
        const at = now();
        const connections = (await connectionsInSectors(deps.db, sectors)).map((row): ConnectionSummary => {
          const age = dataAgeSeconds(row, at);
          const summary: ConnectionSummary = {
            id: row.id,
            display_name: row.display_name,
            sector: row.sector as Sector,
            provider: row.provider,
            status: row.status,
            last_synced_at: row.last_synced_at,
            data_age_seconds: age,
            health: connectionHealth(row, at),
          };
          if (row.sector === 'finance') {
            // Spec 2.1: a finance connection's health is served with the data, with its reason and the consent expiry.
            summary.consent_expires_at = row.consent_expires_at;
            summary.health_reason = row.last_error;
          }
          return summary;
        });
        const { zone, source } = await personZone();
        const result: DescribeContextResult = { service: deps.serviceName, sectors, connections, now: at.toISOString(), time_zone: zone, time_zone_source: source, today: localDate(at, zone) };
        return { result, count: connections.length };
      }) as Promise<DescribeContextResult>;
    },

    getSchema(caller: Caller, input: unknown): Promise<{ objects: unknown[] }> {
      return audited(caller, 'get_schema', input ?? {}, () => {
        const { sector } = parse(GetSchemaInputSchema, input);
        if (sector === undefined) return null;
        if (!isSector(sector)) throw unknownSector(sector, grantedSectors(caller), { kind: 'sector', name: sector });
        return sector;
      }, async (sector) => {
        // Objects of ungranted sectors are absent, not refused (spec 4.2).
        const granted = grantedSectors(caller);
        const listed = CATALOGUE.filter((object) => granted.includes(object.sector) && (sector === null || object.sector === sector));
        const inListed = await connectionsInSectors(deps.db, [...new Set(listed.map((object) => object.sector))]);
        const active = inListed.filter((connection) => connection.status === 'active');
        const financeNotes = financeConnectionNotes(inListed.filter((connection) => connection.sector === 'finance'), now());
        const objects = await Promise.all(
          listed.map(async (object) => {
            const known = await knownValues(deps.db, object);
            const { name, sector: objectSector, description, fields, notes, fieldDocs, spans } = object;
            return {
              name,
              sector: objectSector,
              description,
              fields: fields.map(({ name: fieldName, type, description: about, unit, filterable, sortable }) => ({
                name: fieldName,
                type,
                description: about,
                ...(unit ? { unit } : {}),
                filterable,
                sortable,
                ...(known[fieldName] ? { known_values: known[fieldName].values, ...(known[fieldName].capped ? { known_values_capped: true } : {}) } : {}),
              })),
              notes: [...notes, liveNote(object, active.filter((connection) => connection.sector === objectSector)), ...(objectSector === 'finance' ? financeNotes : [])],
              fieldDocs,
              ...(spans ? { spans } : {}),
            };
          }),
        );
        const { zone } = await personZone();
        const conventions = {
          filter_ops: FILTER_OPS,
          overlaps_rule: 'overlaps works on the start field of an object\'s spans (listed per object): rows whose span [start, end) overlaps value, a relative date or a [low, high] pair.',
          time_zone: zone,
          relative_dates: RELATIVE_DATES,
          relative_dates_rule: RELATIVE_DATES_DOC,
          buckets: BUCKETS,
          buckets_rule: `aggregate.group_by takes {field, bucket} with bucket ${BUCKETS.join(', ')} on a date or timestamp field, in time_zone; the output is named <field>_<bucket> and holds the first local day of the bucket (weeks start on Monday).`,
        };
        return { result: { objects, conventions }, count: objects.length };
      }) as Promise<{ objects: unknown[] }>;
    },

    query(caller: Caller, input: unknown): Promise<QueryResult> {
      return audited(caller, 'query', input, targetOf(caller, input), async (sector) => {
        if (typeof input !== 'object' || input === null || Array.isArray(input)) throw new ValidationError(QUERY_BODY_EXPECTED);
        const name = (input as { object?: unknown }).object;
        if (typeof name !== 'string' || sector === null) throw new ValidationError("object: name the object to read, e.g. 'finance.transaction'");
        const result = await deps.engine.query(objectOf(name, sector as Sector), input, { now, timeZone: async () => (await personZone()).zone });
        return { result, count: result.row_count };
      }) as Promise<QueryResult>;
    },

    getRecord(caller: Caller, input: unknown): Promise<{ object: string; record: Record<string, unknown> }> {
      return audited(caller, 'get_record', input, targetOf(caller, input), async (sector) => {
        const { object: name, id } = parse(GetRecordInputSchema, input);
        // A bare sector name searches every object of the sector (the mirror's /api/records/:sector/:id).
        const bareSector = !name.includes('.');
        const candidates = bareSector ? objectsOfSector(sector as Sector) : [objectOf(name, sector as Sector)];
        for (const object of candidates) {
          const record = await deps.engine.getRecord(object, id);
          if (record) return { result: { object: object.name, record }, count: 1 };
        }
        throw recordNotFound(bareSector ? (sector as string) : name, id, bareSector);
      }) as Promise<{ object: string; record: Record<string, unknown> }>;
    },

    fetchLive(caller: Caller, input: unknown): Promise<FetchLiveResult> {
      return audited(
        caller,
        'fetch_live',
        input,
        targetOf(caller, input),
        async (sector) => {
          const request = parse(FetchLiveInputSchema, input);
          const object = objectOf(request.object, sector as Sector);
          const result = await fetchLiveRows(deps.db, deps.live, { object, id: request.id, where: request.where, connectionId: request.connection_id, now: now() });
          const answered = result.connections.some((connection) => connection.status === 'answered');
          return { result, count: result.rows.length, outcome: answered ? 'ok' : 'error' };
        },
        // The operator's fetch_live is a Console act and is recorded (spec 6).
        { auditOperator: true },
      ) as Promise<FetchLiveResult>;
    },
  };
}

export type ReadService = ReturnType<typeof createReadService>;
