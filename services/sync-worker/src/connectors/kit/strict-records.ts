import { MANAGED_FIELDS } from '@pcg/shared/cache';
import { findObject } from '@pcg/shared/sectors';

/**
 * A record a connector built that does not fit the catalogue: a connector bug. It is never retried into
 * the cache: the sync fails with the field named (in the log; the operator sees an internal failure).
 */
export class ConnectorRecordError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConnectorRecordError';
  }
}

/**
 * Refuses, at the connector edge, any record with a key the object's catalogue does not name, or one
 * the upsert path fills itself. The shared record schema drops unknown keys (push-ingest must ignore
 * what a device adds), which would turn a connector's misspelt field into a silent null.
 */
export function assertCatalogueFields(objectName: string, records: readonly unknown[]): void {
  const object = findObject(objectName);
  if (!object) throw new ConnectorRecordError(`a connector wrote to unknown object '${objectName}'`);
  const allowed = new Set(object.fields.map((field) => field.name).filter((name) => !MANAGED_FIELDS.has(name)));
  records.forEach((record, index) => {
    if (record === null || typeof record !== 'object' || Array.isArray(record)) throw new ConnectorRecordError(`${objectName} record ${index} is not an object`);
    for (const key of Object.keys(record)) {
      if (!allowed.has(key)) throw new ConnectorRecordError(`${objectName} record ${index} has field '${key}', which the catalogue does not name`);
    }
  });
}
