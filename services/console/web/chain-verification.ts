/** The answer of `GET /api/audit/verify` that the ledger's chain panel shows. */
export type ChainVerification = {
  intact: boolean;
  intactThrough: { row: number; id: number | null };
  break: { kind: string; row: number; id: number | null; detail: string } | null;
  key: { state: 'present' | 'absent' | 'unreadable'; id: string | null; file: string };
  firstKeyedRow: number | null;
  anchor: { rows: number; writtenAt: string; matched: boolean | null; chain: 'this' | 'another' | 'old_format' } | null;
  anchorFile: 'present' | 'absent' | 'unreadable';
  anchorPath: string;
  databaseSystemIdChanged: boolean | null;
  proven: string;
  unanchoredRows: number;
  rowsBeforeChain: number;
  verifiedAt: string;
};

export type ChainLine = { text: string; tone?: 'ok' | 'error' };

function anchorLine(answer: ChainVerification): string {
  const anchor = answer.anchor;
  if (anchor === null) {
    return answer.anchorFile === 'unreadable' ? `Anchor: ${answer.anchorPath} is damaged; nothing to compare with.` : 'Anchor: none written yet.';
  }
  if (anchor.chain === 'another') return `Anchor: ${answer.anchorPath}, written ${anchor.writtenAt}: this anchor belongs to another chain.`;
  const state = anchor.matched === true ? 'matched' : anchor.matched === false ? 'not matched' : 'not reached';
  const old = anchor.chain === 'old_format' ? ' (of the old format: accepted once, replaced at the next anchor)' : '';
  return `Anchor: ${answer.anchorPath}, ${anchor.rows} rows, written ${anchor.writtenAt}: ${state}${old}.`;
}

function keyLine(answer: ChainVerification): string {
  if (answer.key.state === 'present') return `Chain key: ${answer.key.id} (${answer.key.file}).`;
  if (answer.key.state === 'unreadable') return `Chain key: ${answer.key.file} is damaged, so only internal consistency was checked.`;
  return `Chain key: none at ${answer.key.file}, so only internal consistency was checked.`;
}

/** What the panel says about a verification: the verdict, the break, which key and anchor were used and what was proven. */
export function chainVerificationLines(answer: ChainVerification): ChainLine[] {
  const through = answer.intactThrough.row === 0 ? 'no chained row yet' : `intact up to row ${answer.intactThrough.row} (id ${answer.intactThrough.id})`;
  const lines: ChainLine[] = [
    answer.intact ? { text: `The ledger is intact: ${through}.`, tone: 'ok' } : { text: `The ledger was changed after it was written: ${through}.`, tone: 'error' },
  ];
  if (answer.break) lines.push({ text: `${answer.break.kind}${answer.break.row > 0 ? ` at row ${answer.break.row}` : ''}: ${answer.break.detail}` });
  lines.push({ text: `Proven: ${answer.proven}.` });
  lines.push({ text: keyLine(answer) });
  lines.push({ text: anchorLine(answer) });
  if (answer.firstKeyedRow !== null && answer.firstKeyedRow > 1) lines.push({ text: `Rows before ${answer.firstKeyedRow} were chained before the chain key; they were checked as written.` });
  if (answer.databaseSystemIdChanged === true) lines.push({ text: 'For information: the database system identifier differs from the anchor\'s (a logical restore changes it).' });
  if (answer.unanchoredRows > 0) lines.push({ text: `${answer.unanchoredRows} newest rows are not anchored outside the database yet (a cut there cannot be proven).` });
  if (answer.rowsBeforeChain > 0) lines.push({ text: `${answer.rowsBeforeChain} rows written before the chain began are not covered.` });
  return lines;
}
