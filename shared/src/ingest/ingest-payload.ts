import { recordSchemaFor } from '../cache/index.ts';
import { ValidationError } from '../http/index.ts';
import { findObject, objectsOfSector, type Sector } from '../sectors/index.ts';
import { isHaePayload, recordsFromHae } from './hae-format.ts';

export type IngestFormat = 'health-auto-export' | 'records';

export type IngestBatch = {
  format: IngestFormat;
  /** Records per catalogue object, all of the connection's sector. */
  byObject: Map<string, Array<Record<string, unknown>>>;
  /** Data points of the health app's export that could not be read (counted, not stored). */
  skipped: number;
};

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * The canonical form, `{"records": [{"object": "health.sample", "source_id": "…", …fields}]}`. The
 * connection's sector decides what may arrive: a record naming an object of another sector is refused.
 * `object` may be left out when the sector has a single object (home, mail, contacts, calendar); in
 * `health` and `finance` every record names its object. Fields outside the catalogue are ignored.
 */
function canonicalRecords(records: unknown[], sector: Sector): IngestBatch {
  const objects = objectsOfSector(sector);
  const byObject = new Map<string, Array<Record<string, unknown>>>();
  records.forEach((record, index) => {
    if (!isObject(record)) throw new ValidationError(`records[${index}] must be an object`);
    const named = record.object;
    let objectName: string;
    if (named === undefined) {
      if (objects.length !== 1) throw new ValidationError(`records[${index}]: name its object, one of ${objects.map((o) => o.name).join(', ')}`);
      objectName = objects[0]?.name ?? '';
    } else if (typeof named !== 'string' || !findObject(named)) {
      throw new ValidationError(`records[${index}]: unknown object ${JSON.stringify(named)}`);
    } else if (findObject(named)?.sector !== sector) {
      throw new ValidationError(`records[${index}]: object '${named}' is not in this connection's sector '${sector}'`);
    } else objectName = named;
    const object = findObject(objectName);
    if (!object) throw new ValidationError(`records[${index}]: unknown object '${objectName}'`);
    const parsed = recordSchemaFor(object).safeParse(record);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new ValidationError(`records[${index}]: '${issue?.path.join('.') || objectName}' ${issue?.message ?? 'is invalid'}`);
    }
    byObject.set(objectName, [...(byObject.get(objectName) ?? []), record]);
  });
  return { format: 'records', byObject, skipped: 0 };
}

/**
 * Reads a push-ingest body for a connection of `sector`: the health app's export JSON (health
 * connections only) or the canonical `{records:[…]}`. Throws a `ValidationError` naming what is wrong.
 */
export function readIngestPayload(body: unknown, sector: Sector): IngestBatch {
  if (isObject(body) && Array.isArray(body.records)) return canonicalRecords(body.records, sector);
  if (isHaePayload(body)) {
    if (sector !== 'health') throw new ValidationError(`the health app's export can only be pushed to a health connection; this one is '${sector}'`);
    const { samples, workouts, sleepSessions, skipped } = recordsFromHae(body);
    const byObject = new Map<string, Array<Record<string, unknown>>>([
      ['health.sample', samples],
      ['health.workout', workouts],
      ['health.sleep_session', sleepSessions],
    ]);
    return { format: 'health-auto-export', byObject, skipped };
  }
  throw new ValidationError(
    'unrecognised payload: send the health app\'s export ({"data":{"metrics":[…],"workouts":[…]}}) or {"records":[…]} with catalogue fields',
  );
}
