import { recordSchemaFor } from '../cache/index.ts';
import { ValidationError } from '../errors/index.ts';
import { findObject, objectsOfSector, type ObjectDef, type Sector } from '../sectors/index.ts';
import { isHaePayload, recordsFromHae } from './hae-format.ts';
import type { RejectedRecord } from './ingest-types.ts';

export type IngestFormat = 'health-auto-export' | 'records';

export type IngestBatch = {
  format: IngestFormat;
  /** Records per catalogue object, all of the connection's sector, each one checked storable. */
  byObject: Map<string, Array<Record<string, unknown>>>;
  /** How many records or data points were not kept: `rejected.length`. */
  skipped: number;
  /** Every record or data point not kept, with its place in the payload, its field and what is allowed. */
  rejected: RejectedRecord[];
};

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** The catalogue's verdict on one record: null when it can be stored, else the field and the rule. */
function recordProblem(object: ObjectDef, record: unknown): { field: string; error: string } | null {
  const parsed = recordSchemaFor(object).safeParse(record);
  if (parsed.success) return null;
  const issue = parsed.error.issues[0];
  return { field: issue?.path.join('.') || '(record)', error: issue?.message ?? 'is invalid' };
}

/** Which object a canonical record names, or why it cannot be read. */
function objectOf(record: unknown, sector: Sector): ObjectDef | { field: string; error: string } {
  if (!isObject(record)) return { field: '(record)', error: 'must be an object' };
  const objects = objectsOfSector(sector);
  const named = record.object;
  if (named === undefined) {
    const only = objects.length === 1 ? objects[0] : undefined;
    return only ?? { field: 'object', error: `name its object, one of ${objects.map((o) => o.name).join(', ')}` };
  }
  const object = typeof named === 'string' ? findObject(named) : undefined;
  if (!object) return { field: 'object', error: `unknown object ${JSON.stringify(named)}` };
  if (object.sector !== sector) return { field: 'object', error: `object '${object.name}' is not in this connection's sector '${sector}'` };
  return object;
}

/**
 * The canonical form, `{"records": [{"object": "health.sample", "source_id": "…", …fields}]}`. The
 * connection's sector decides what may arrive: a record naming an object of another sector is refused.
 * `object` may be left out when the sector has a single object (home, mail, contacts, calendar); in
 * `health` and `finance` every record names its object. Fields outside the catalogue are ignored. A
 * record that cannot be stored is listed, and the others are kept.
 */
function canonicalRecords(records: unknown[], sector: Sector): IngestBatch {
  const byObject = new Map<string, Array<Record<string, unknown>>>();
  const rejected: RejectedRecord[] = [];
  records.forEach((record, index) => {
    const object = objectOf(record, sector);
    const problem = 'field' in object ? object : recordProblem(object, record);
    if (problem) rejected.push({ record: `records[${index}]`, ...problem });
    else if (!('field' in object)) byObject.set(object.name, [...(byObject.get(object.name) ?? []), record as Record<string, unknown>]);
  });
  return { format: 'records', byObject, skipped: rejected.length, rejected };
}

/** The health app's export: points it cannot read, and records it read that cannot be stored, are listed. */
function haeRecords(body: unknown): IngestBatch {
  const out = recordsFromHae(body);
  const rejected = [...out.rejected];
  const byObject = new Map<string, Array<Record<string, unknown>>>();
  for (const [name, records] of [['health.sample', out.samples], ['health.workout', out.workouts], ['health.sleep_session', out.sleepSessions]] as const) {
    const object = findObject(name);
    if (!object) throw new Error(`the catalogue lacks ${name}`);
    byObject.set(
      name,
      records.filter((record) => {
        const problem = recordProblem(object, record);
        if (problem) rejected.push({ record: out.origins.get(record) ?? 'data', ...problem });
        return problem === null;
      }),
    );
  }
  return { format: 'health-auto-export', byObject, skipped: rejected.length, rejected };
}

/**
 * Reads a push-ingest body for a connection of `sector`: the health app's export JSON (health
 * connections only) or the canonical `{records:[…]}`. Records that cannot be stored are listed in
 * `rejected`; a body that is neither form throws a `ValidationError` naming what is wrong.
 */
export function readIngestPayload(body: unknown, sector: Sector): IngestBatch {
  if (isObject(body) && Array.isArray(body.records)) return canonicalRecords(body.records, sector);
  if (isHaePayload(body)) {
    if (sector !== 'health') throw new ValidationError(`the health app's export can only be pushed to a health connection; this one is '${sector}'`);
    return haeRecords(body);
  }
  throw new ValidationError(
    'unrecognised payload: send the health app\'s export ({"data":{"metrics":[…],"workouts":[…]}}) or {"records":[…]} with catalogue fields',
  );
}
