import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import { createQueryEngine } from '../query/index.ts';
import { PROVIDERS } from '../providers/index.ts';
import { CATALOGUE, SECTORS, type Sector } from '../sectors/index.ts';
import { createCapturingLogger, insertTestConnection, useTestEnvironment } from '@pcg/testkit/testing';
import { createReadService, type ReadService } from './reads-service.ts';
import type { Caller } from './reads-types.ts';

/**
 * Issue 34, done when: a test walks every note and field doc against the provider descriptors, and finds
 * no promise of a live read or of a message body that no connected provider can give. The descriptors'
 * liveObjects are the oracle; the catalogue's own texts promise nothing about fetch_live at all.
 */
const testEnv = useTestEnvironment();
let reads: ReadService;
const every: Caller = { kind: 'agent', grant: { agentId: 1, agentName: 'claude', sectors: [...SECTORS], expiresAt: null, generation: 0 }, requestId: 'req-1' };
type Served = { name: string; sector: Sector; description: string; notes: string[]; fieldDocs: Record<string, string>; fields: Array<{ description: string }> };

/** Every text an agent reads about an object: its description, notes, field descriptions and fieldDocs. */
const textsOf = (object: Pick<Served, 'description' | 'notes' | 'fieldDocs' | 'fields'>) => [
  object.description,
  ...object.notes,
  ...object.fields.map((fieldDef) => fieldDef.description),
  ...Object.values(object.fieldDocs),
];
const liveKinds = (object: string) => PROVIDERS.filter((provider) => provider.liveObjects?.includes(object));
const sentences = (text: string) => text.split(/(?<=[.;:])\s+/);

beforeAll(async () => {
  reads = createReadService({ db: testEnv.db, engine: createQueryEngine({ db: testEnv.db, direct: testEnv.direct }), audit: { record: () => undefined }, log: createCapturingLogger().log, serviceName: 'pcg-test' });
});

describe('notes and field docs against the provider descriptors (issue 34)', () => {
  it('the catalogue itself promises no live read and no message body', () => {
    for (const object of CATALOGUE) {
      const texts = textsOf({ ...object, notes: [...object.notes], fields: [...object.fields] });
      for (const text of texts) {
        expect(text, object.name).not.toMatch(/fetch_live|\breads? (\w+ )?live|from the source/);
        for (const sentence of sentences(text).filter((part) => /\bbod(y|ies)\b(?! mass)/i.test(part))) expect(sentence, object.name).toMatch(/\bnever\b|\bno\b/i);
      }
    }
  });

  it('with a connection of every provider active, each object has one fetch_live note, naming exactly the providers whose descriptor reads it live', async () => {
    const ids: string[] = [];
    for (const provider of PROVIDERS) {
      for (const sector of provider.sectors) ids.push(await insertTestConnection(testEnv.db, { sector, provider: provider.kind, displayName: `${provider.kind} ${sector}` }));
    }
    try {
      const { objects } = (await reads.getSchema(every, {})) as { objects: Served[] };
      expect(objects.map((object) => object.name)).toEqual(CATALOGUE.map((object) => object.name));
      for (const object of objects) {
        const about = object.notes.filter((note) => note.includes('fetch_live'));
        expect(about, object.name).toHaveLength(1);
        const note = about[0] as string;
        const live = liveKinds(object.name);
        if (live.length === 0) {
          expect(note, object.name).toMatch(new RegExp(`^fetch_live cannot read ${object.name.replace('.', '\\.')}: `));
          expect(note).toContain("query the cache instead; describe_context gives each connection's data age (data_age_seconds)");
        } else {
          expect(note, object.name).toMatch(new RegExp(`^fetch_live reads ${object.name.replace('.', '\\.')} from the source for `));
          for (const provider of live) expect(note).toContain(provider.displayName);
        }
        // A provider named before "connections" in a promise must read the object live by its descriptor.
        for (const provider of PROVIDERS.filter((candidate) => !candidate.liveObjects?.includes(object.name))) {
          expect(note.startsWith('fetch_live reads') && note.split(' connections')[0]?.includes(provider.displayName), `${object.name} promises ${provider.kind}`).toBe(false);
        }
        for (const text of textsOf(object).filter((candidate) => candidate !== note)) expect(text, object.name).not.toMatch(/fetch_live/);
      }
      // Home Assistant reads home.entity live; its connection is named as connected.
      expect(objects.find((object) => object.name === 'home.entity')?.notes).toContain(
        'fetch_live reads home.entity from the source for Home Assistant connections (connected: home-assistant home).',
      );
      expect(objects.find((object) => object.name === 'mail.message')?.notes).toContain(
        "fetch_live cannot read mail.message: none of its providers (Microsoft (Outlook mail, calendar, contacts), Gmail, Apple iCloud) is read live by this gateway; query the cache instead; describe_context gives each connection's data age (data_age_seconds).",
      );
    } finally {
      await testEnv.db.query(sql.unsafe`DELETE FROM connections WHERE id = ANY(${sql.array(ids, 'uuid')})`);
    }
  });

  it('promises no live read of home.entity when no hub is connected, and says so', async () => {
    const demo = await insertTestConnection(testEnv.db, { sector: 'home', provider: 'demo' });
    try {
      const { objects } = (await reads.getSchema(every, { sector: 'home' })) as { objects: Served[] };
      expect(objects[0]?.notes).toContain(
        "fetch_live reads home.entity from the source only for Home Assistant connections, and none is connected; query the cache instead; describe_context gives each connection's data age (data_age_seconds).",
      );
    } finally {
      await testEnv.db.query(sql.unsafe`DELETE FROM connections WHERE id = ${demo}`);
    }
  });
});
