import { describe, expect, it } from 'vitest';
import { useTestEnvironment } from '@pcg/testkit/testing';
import { ConnectorRecordError } from '../../src/connectors/kit/strict-records.ts';
import { createConnectionStore } from '../../src/sync/connection-store.ts';
import { entityRows, insertHubConnection } from '../helpers.ts';

const testEnv = useTestEnvironment();

describe('records at the connector edge', () => {
  it('a misspelt field fails loudly, naming the field, and nothing is written', async () => {
    const id = await insertHubConnection(testEnv.db, { baseUrl: 'http://127.0.0.1:9', token: 't' });
    const cache = createConnectionStore(testEnv.db).cacheWriter({ id, provider: 'home-assistant' });
    const misspelt = { source_id: 'light.a', entity_id: 'light.a', domain: 'light', stat: 'on' };
    const error = await cache.upsert('home.entity', [{ source_id: 'light.b', entity_id: 'light.b', domain: 'light', state: 'on' }, misspelt]).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConnectorRecordError);
    expect((error as Error).message).toBe("home.entity record 1 has field 'stat', which the catalogue does not name");
    expect(await entityRows(testEnv.db, id)).toEqual([]);
  });

  it('a field the upsert path fills itself, or an unknown object, is refused too; catalogue fields pass', async () => {
    const id = await insertHubConnection(testEnv.db, { baseUrl: 'http://127.0.0.1:9', token: 't' });
    const cache = createConnectionStore(testEnv.db).cacheWriter({ id, provider: 'home-assistant' });
    await expect(cache.upsert('home.entity', [{ source_id: 'light.a', connection_id: id }])).rejects.toThrow("home.entity record 0 has field 'connection_id'");
    await expect(cache.upsert('home.entities', [{ source_id: 'light.a' }])).rejects.toThrow("unknown object 'home.entities'");
    expect(await cache.upsert('home.entity', [{ source_id: 'light.a', entity_id: 'light.a', domain: 'light', state: 'on', friendly_name: null }])).toBe(1);
  });
});
