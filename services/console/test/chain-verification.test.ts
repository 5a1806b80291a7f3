import { describe, expect, it } from 'vitest';
import { chainVerificationLines, type ChainVerification } from '../web/chain-verification.ts';

const intact: ChainVerification = {
  intact: true,
  intactThrough: { row: 20, id: 31 },
  break: null,
  key: { state: 'present', id: '0123456789abcdef', file: '/data/audit-chain.key' },
  firstKeyedRow: 9,
  anchor: { rows: 20, writtenAt: '2026-11-27T01:00:00.000Z', matched: true, chain: 'this' },
  anchorFile: 'present',
  anchorPath: '/data/audit-anchor.json',
  databaseSystemIdChanged: null,
  proven: 'with chain key 0123456789abcdef: every edit, insertion, deletion, reorder and forged append up to the last anchor',
  unanchoredRows: 0,
  rowsBeforeChain: 0,
  verifiedAt: '2026-11-27T01:00:01.000Z',
};

const texts = (answer: ChainVerification) => chainVerificationLines(answer).map((line) => line.text);

describe("the ledger's chain panel", () => {
  it('says which key and which anchor it used, what was proven, and where the keyed rows begin', () => {
    expect(texts(intact)).toEqual([
      'The ledger is intact: intact up to row 20 (id 31).',
      `Proven: ${intact.proven}.`,
      'Chain key: 0123456789abcdef (/data/audit-chain.key).',
      'Anchor: /data/audit-anchor.json, 20 rows, written 2026-11-27T01:00:00.000Z: matched.',
      'Rows before 9 were chained before the chain key; they were checked as written.',
    ]);
  });

  it('says that without the key only internal consistency was checked', () => {
    const lines = texts({ ...intact, key: { state: 'absent', id: null, file: '/data/audit-chain.key' }, proven: 'internal consistency only (there is no chain key in DATA_DIR)' });
    expect(lines).toContain('Chain key: none at /data/audit-chain.key, so only internal consistency was checked.');
  });

  it('says an anchor of another chain belongs to another chain, and a changed system identifier is information only', () => {
    const lines = chainVerificationLines({
      ...intact,
      intact: false,
      break: { kind: 'another_chain', row: 0, id: null, detail: 'this anchor belongs to another chain (chain x)' },
      anchor: { rows: 50, writtenAt: '2026-11-27T01:00:00.000Z', matched: null, chain: 'another' },
      databaseSystemIdChanged: true,
    });
    expect(lines[0]).toEqual({ text: 'The ledger was changed after it was written: intact up to row 20 (id 31).', tone: 'error' });
    expect(lines.map((line) => line.text)).toEqual(
      expect.arrayContaining([
        'another_chain: this anchor belongs to another chain (chain x)',
        'Anchor: /data/audit-anchor.json, written 2026-11-27T01:00:00.000Z: this anchor belongs to another chain.',
        "For information: the database system identifier differs from the anchor's (a logical restore changes it).",
      ]),
    );
  });
});
