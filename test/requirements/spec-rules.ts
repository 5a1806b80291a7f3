/**
 * Splits the interface specification into rules with stable ids, so the requirements map can name each one:
 * `<section>.r<n>` for the n-th table row of a section (header rows and separators do not count),
 * `<section>.i<n>` for a numbered item, `<section>.b<n>` for a bullet, `<section>.p<n>` for a paragraph.
 * A paragraph that only says something is "not shown", or only introduces what follows, states no rule.
 */
export type SpecRule = { id: string; section: string; text: string };

const HEADING = /^#{2,3}\s+(\d+(?:\.\d+)?)\.?\s/;
const NUMBERED = /^\s*(\d+)\.\s+(.*)$/;
const BULLET = /^\s*-\s+(.*)$/;
const SEPARATOR = /^\|[\s:|-]+\|$/;

function statesNoRule(text: string): boolean {
  // An introduction to the table or list that follows ("Rules:", "Advertised metadata:").
  if (text.trim().endsWith(':') && text.trim().split(/\s+/).length <= 3) return true;
  return /:\s*not shown\.?$/i.test(text.trim()) && text.split(/(?<=\.)\s+/).every((sentence) => /not shown\.?$/i.test(sentence.trim()));
}

function cells(row: string): string[] {
  return row.slice(1, -1).split(/(?<!\\)\|/).map((cell) => cell.trim());
}

export function specRules(markdown: string): SpecRule[] {
  const rules: SpecRule[] = [];
  let section = '0';
  const counters = new Map<string, number>();
  const next = (kind: string) => {
    const key = `${section}.${kind}`;
    const n = (counters.get(key) ?? 0) + 1;
    counters.set(key, n);
    return `${key}${n}`;
  };
  const add = (kind: string, text: string) => rules.push({ id: next(kind), section, text });

  const lines = markdown.split('\n');
  for (let index = 0; index < lines.length; index += 1) {
    const line = lines[index]!.trimEnd();
    const heading = HEADING.exec(line);
    if (heading) {
      section = heading[1]!;
      continue;
    }
    if (line.startsWith('#') || line.trim() === '') continue;
    if (line.startsWith('|')) {
      // The first row of a table is its header; the separator follows it.
      const isHeader = lines[index + 1]?.trim().match(SEPARATOR) !== null && !lines[index - 1]?.trim().startsWith('|');
      if (isHeader || SEPARATOR.test(line.trim())) continue;
      add('r', cells(line).join(' | '));
      continue;
    }
    const numbered = NUMBERED.exec(line);
    if (numbered) {
      add('i', numbered[2]!);
      continue;
    }
    const bullet = BULLET.exec(line);
    if (bullet) {
      add('b', bullet[1]!);
      continue;
    }
    if (section !== '0' && !statesNoRule(line)) add('p', line.trim());
  }
  return rules;
}
