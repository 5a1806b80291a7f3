import { sql } from 'slonik';
import { beforeAll, describe, expect, it } from 'vitest';
import { insertTestConnection, useTestEnvironment } from '@pcg/testkit/testing';
import { findActionConnection, listConnectionActions } from './live-queries.ts';

const testEnv = useTestEnvironment();
const turnOn = { name: 'home.light.turn_on', sector: 'home', description: 'Turn on', input_schema: { type: 'object' } };
let hub: string;

beforeAll(async () => {
  hub = await insertTestConnection(testEnv.db, { sector: 'home', provider: 'home-assistant' });
  const paused = await insertTestConnection(testEnv.db, { sector: 'home', provider: 'home-assistant', status: 'paused' });
  await insertTestConnection(testEnv.db, { sector: 'health', provider: 'health-auto-export' });
  await testEnv.db.query(sql.unsafe`UPDATE connections SET actions = ${sql.jsonb([turnOn, { broken: true }])} WHERE id = ${hub}::uuid`);
  await testEnv.db.query(sql.unsafe`UPDATE connections SET actions = ${sql.jsonb([{ ...turnOn, name: 'home.lock.unlock' }])} WHERE id = ${paused}::uuid`);
});

describe('stored action catalogues', () => {
  it('lists the actions of active connections in the asked sectors, skipping entries that do not parse', async () => {
    expect(await listConnectionActions(testEnv.db, ['home', 'health'])).toEqual([{ ...turnOn, connectionId: hub }]);
    expect(await listConnectionActions(testEnv.db, ['health'])).toEqual([]);
    expect(await listConnectionActions(testEnv.db, [])).toEqual([]);
  });

  it('finds the connection that offers an action, and none for a paused one or another sector', async () => {
    expect(await findActionConnection(testEnv.db, 'home.light.turn_on')).toBe(hub);
    expect(await findActionConnection(testEnv.db, 'home.lock.unlock')).toBeNull();
    expect(await findActionConnection(testEnv.db, 'finance.light.turn_on')).toBeNull();
  });
});
