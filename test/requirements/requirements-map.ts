/**
 * Reads `docs/requirements.md`: one table row per specification rule, `| id | rule | proved by |`. The rule
 * column starts with the rule's own words (so a renumbered or reworded specification shows up as a stale
 * row); "proved by" lists `path › full test name` references separated by `<br>`, or a reasoned exception.
 * The full name is vitest's: suites and title joined by " > ".
 */
export type MapEntry = { id: string; excerpt: string; proofs: Proof[]; line: number };
export type Proof = { kind: 'test'; file: string; title: string } | { kind: 'exception'; text: string };

/** The reasoned entries a row may give besides or instead of a test: untestable, unbuilt, or a scoped departure. */
export const EXCEPTION = /^(not testable here|not built yet: issue \d+|departure: issue \d+)\b.*\S/;

export function parseRequirementsMap(markdown: string): MapEntry[] {
  const entries: MapEntry[] = [];
  markdown.split('\n').forEach((raw, index) => {
    const line = raw.trim();
    if (!line.startsWith('|') || /^\|\s*id\s*\|/.test(line) || /^\|[\s:|-]+\|$/.test(line)) return;
    const cells = line.slice(1, -1).split(/(?<!\\)\|/).map((cell) => cell.trim());
    if (cells.length !== 3) throw new Error(`docs/requirements.md line ${index + 1}: a row has three cells: id, rule, proved by`);
    const [id, excerpt, proved] = cells as [string, string, string];
    const proofs = proved.split(/\s*<br>\s*/).filter((part) => part.length > 0).map((part): Proof => {
      const arrow = part.indexOf(' › ');
      if (arrow > 0) return { kind: 'test', file: part.slice(0, arrow).replace(/`/g, '').trim(), title: part.slice(arrow + 3).replace(/\\\|/g, '|').trim() };
      return { kind: 'exception', text: part };
    });
    entries.push({ id: id.replace(/`/g, ''), excerpt: excerpt.replace(/…$/, '').trim(), proofs, line: index + 1 });
  });
  return entries;
}
