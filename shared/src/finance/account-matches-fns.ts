/** A cached account as deduplication reads it: its stable identity, its connection's age and what it shows. */
export type MatchableAccount = {
  connectionId: string;
  sourceId: string;
  /** Rank of the account's connection by creation (1 = created first): the earlier connection's rows count for a merged pair. */
  connectionRank: number;
  institutionDomain: string | null;
  name: string | null;
  mask: string | null;
};

/** One pair of accounts at the same institution: `first` is the earlier connection's. */
export type CandidatePair = {
  first: { connectionId: string; sourceId: string };
  second: { connectionId: string; sourceId: string };
  institutionDomain: string;
  /** Both report the same last 4: merged without asking. */
  automatic: boolean;
};

/** `www.Chase.com ` → `chase.com`; null when nothing is left. */
export function normalDomain(domain: string | null): string | null {
  const text = domain?.trim().toLowerCase().replace(/^www\./, '').replace(/\.$/, '') ?? '';
  return text === '' ? null : text;
}

/**
 * The last 4 digits of an account (spec 2.1): the mask when it is 4 digits, otherwise the last 4 digits
 * in the account name when it ends with them (`Total Checking ••4821`, `Visa (x1234)`); null when
 * neither shows them.
 */
export function lastFourOf(account: Pick<MatchableAccount, 'mask' | 'name'>): string | null {
  const mask = account.mask?.trim() ?? '';
  if (/^\d{4}$/.test(mask)) return mask;
  const fromMask = /(\d{4})$/.exec(mask)?.[1];
  if (fromMask) return fromMask;
  return /(\d{4})\D*$/.exec(account.name ?? '')?.[1] ?? null;
}

const byConnectionAge = (a: MatchableAccount, b: MatchableAccount) => a.connectionRank - b.connectionRank || a.sourceId.localeCompare(b.sourceId);

/**
 * Every pair of accounts of two different connections at the same institution domain that may be the
 * same account: both last 4 equal → automatic; a last 4 missing on either side → a question. Pairs
 * whose last 4 both show and differ are different accounts and not listed.
 */
export function candidatePairs(accounts: readonly MatchableAccount[]): CandidatePair[] {
  const byDomain = new Map<string, MatchableAccount[]>();
  for (const account of accounts) {
    const domain = normalDomain(account.institutionDomain);
    if (domain) byDomain.set(domain, [...(byDomain.get(domain) ?? []), account]);
  }
  const pairs: CandidatePair[] = [];
  for (const [domain, group] of byDomain) {
    const sorted = [...group].sort(byConnectionAge);
    sorted.forEach((first, i) => {
      for (const second of sorted.slice(i + 1)) {
        if (second.connectionId === first.connectionId) continue;
        const [a, b] = [lastFourOf(first), lastFourOf(second)];
        if (a !== null && b !== null && a !== b) continue;
        pairs.push({
          first: { connectionId: first.connectionId, sourceId: first.sourceId },
          second: { connectionId: second.connectionId, sourceId: second.sourceId },
          institutionDomain: domain,
          automatic: a !== null && a === b,
        });
      }
    });
  }
  return pairs;
}
