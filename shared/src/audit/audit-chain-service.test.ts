import { describe, expect, it } from 'vitest';
import { formatAuditLedgerVerification, provenBy, type AuditLedgerVerification } from './audit-chain-service.ts';

type Report = Parameters<typeof provenBy>[0];
const anchor = (matched: boolean | null, rows = 40) => ({ rows, id: 9, hash: 'ab'.repeat(32), createdAt: null, writtenAt: '2026-11-27T06:00:00.000Z', matched, chain: 'this' as const });
const keyed = (overrides: Partial<Report> = {}): Report => ({ keyId: 'k1', firstKeyedRow: 1, uncheckedRows: 0, intactThrough: { row: 50, id: 59 }, anchor: null, ...overrides });

describe('provenBy: what a walk proved, in one sentence', () => {
  it('with the key and an anchor matched, everything up to the anchor', () => {
    expect(provenBy(keyed({ anchor: anchor(true) }), 'present')).toBe(
      "with chain key k1: every edit, insertion, deletion, reorder and forged append up to the anchor's row 40; rows after it are covered from the next anchor on",
    );
  });

  it('with the key and no anchor of this chain reached, all but a cut of the newest rows', () => {
    const reach = 'every edit, insertion, reorder and forged append among the rows read; with no anchor of this chain reached, a cut of the newest rows with the head record rewound cannot be proven';
    expect(provenBy(keyed(), 'present')).toBe(`with chain key k1: ${reach}`);
    expect(provenBy(keyed({ anchor: anchor(null) }), 'present')).toBe(`with chain key k1: ${reach}`);
    expect(provenBy(keyed({ anchor: anchor(false) }), 'present')).toBe(`with chain key k1: ${reach}`);
  });

  it('names the rows of the old, unkeyed chain, checked as written', () => {
    expect(provenBy(keyed({ firstKeyedRow: 9, anchor: anchor(true) }), 'present')).toBe(
      "with chain key k1: every edit, insertion, deletion, reorder and forged append up to the anchor's row 40; rows after it are covered from the next anchor on; rows before 9 are of the old, unkeyed chain (checked as written, without the key)",
    );
    expect(provenBy(keyed({ firstKeyedRow: null }), 'present')).toMatch(/; every row is of the old, unkeyed chain \(checked as written, without the key\)$/);
  });

  it('without the key, internal consistency only, saying why and what could not be checked', () => {
    const unkeyed = keyed({ keyId: null, uncheckedRows: 0 });
    expect(provenBy(unkeyed, 'absent')).toBe('internal consistency only (there is no chain key in DATA_DIR): places, order, the head record and the anchor were checked');
    expect(provenBy(unkeyed, 'unreadable')).toBe('internal consistency only (the chain key file is damaged): places, order, the head record and the anchor were checked');
    expect(provenBy({ ...unkeyed, uncheckedRows: 8 }, 'absent')).toBe(
      'internal consistency only (there is no chain key in DATA_DIR): places, order, the head record and the anchor were checked; the content of 8 keyed rows could not be',
    );
  });
});

const verification = (overrides: Partial<AuditLedgerVerification> = {}): AuditLedgerVerification => ({
  intact: true,
  intactThrough: { row: 12, id: 34 },
  break: null,
  rowsBeforeChain: 0,
  headRows: 12,
  chainId: 'c1',
  key: { state: 'present', id: 'k1', file: '/data/audit-chain.key' },
  firstKeyedRow: null,
  uncheckedRows: 0,
  anchor: null,
  anchorFile: 'absent',
  anchorPath: '/data/audit-anchor.json',
  databaseSystemIdChanged: null,
  proven: 'with chain key k1: all',
  unanchoredRows: 0,
  checkedRows: 12,
  verifiedAt: '2026-11-27T07:00:00.000Z',
  elapsedMs: 1250,
  ...overrides,
});

describe('formatAuditLedgerVerification: the verification as lines for a terminal', () => {
  it('an intact chain, with its key, no anchor yet', () => {
    expect(formatAuditLedgerVerification(verification())).toBe(
      [
        'audit chain intact: intact up to row 12 (id 34)',
        '  proven: with chain key k1: all',
        '  chain key: k1 (/data/audit-chain.key)',
        '  last anchor: none written yet',
        '  12 rows read in 1.3 s',
      ].join('\n'),
    );
  });

  it('a broken chain, every optional line present', () => {
    const text = formatAuditLedgerVerification(
      verification({
        intact: false,
        intactThrough: { row: 0, id: null },
        break: { kind: 'edited', row: 1, id: 7, detail: 'row id 7 no longer matches' },
        key: { state: 'absent', id: null, file: '/data/audit-chain.key' },
        firstKeyedRow: 3,
        anchor: { ...anchor(false, 5), chain: 'this' },
        databaseSystemIdChanged: true,
        unanchoredRows: 4,
        rowsBeforeChain: 2,
        checkedRows: 1,
        elapsedMs: 40,
      }),
    );
    expect(text).toBe(
      [
        'audit chain BROKEN: no chained row proven intact',
        '  edited at row 1: row id 7 no longer matches',
        '  proven: with chain key k1: all',
        '  chain key: none at /data/audit-chain.key; internal consistency only',
        '  first keyed row: 3',
        '  last anchor: 5 rows, written 2026-11-27T06:00:00.000Z (NOT matched) from /data/audit-anchor.json',
        "  (information) the database system identifier differs from the anchor's: a logical restore changes it",
        '  4 rows after the last anchor are not yet anchored: a cut among them cannot be proven',
        '  2 rows written before the chain began are not covered',
        '  1 rows read in 0.0 s',
      ].join('\n'),
    );
  });

  it('names a break with no row without a place, and each anchor state and owner', () => {
    const lines = (overrides: Partial<AuditLedgerVerification>) => formatAuditLedgerVerification(verification(overrides)).split('\n');
    expect(lines({ intact: false, break: { kind: 'another_chain', row: 0, id: null, detail: 'elsewhere' } })[1]).toBe('  another_chain: elsewhere');
    const anchorLine = (anchorOverrides: Partial<NonNullable<AuditLedgerVerification['anchor']>>) =>
      lines({ anchor: { ...anchor(true, 5), ...anchorOverrides } }).find((line) => line.startsWith('  last anchor'));
    expect(anchorLine({})).toBe('  last anchor: 5 rows, written 2026-11-27T06:00:00.000Z (matched) from /data/audit-anchor.json');
    expect(anchorLine({ matched: null, chain: 'another' })).toBe(
      '  last anchor: 5 rows, written 2026-11-27T06:00:00.000Z (not reached, this anchor belongs to another chain) from /data/audit-anchor.json',
    );
    expect(anchorLine({ chain: 'old_format' })).toBe(
      '  last anchor: 5 rows, written 2026-11-27T06:00:00.000Z (matched, of the old format: accepted once, replaced at the next anchor) from /data/audit-anchor.json',
    );
    expect(lines({ anchorFile: 'unreadable' })).toContain('  last anchor: /data/audit-anchor.json is damaged; nothing to compare with');
    expect(lines({ key: { state: 'unreadable', id: null, file: '/data/audit-chain.key' } })).toContain('  chain key: /data/audit-chain.key is damaged; internal consistency only');
    expect(lines({ databaseSystemIdChanged: false }).some((line) => line.includes('(information)'))).toBe(false);
  });
});
