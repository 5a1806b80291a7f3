/** Edit distance (insertions, deletions, substitutions), case-insensitive. */
function distance(a: string, b: string): number {
  const left = a.toLowerCase();
  const right = b.toLowerCase();
  let previous = Array.from({ length: right.length + 1 }, (_, j) => j);
  for (let i = 1; i <= left.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= right.length; j += 1) {
      const substitution = (previous[j - 1] ?? 0) + (left[i - 1] === right[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[right.length] ?? 0;
}

/**
 * The candidate a mistyped name most likely meant, or undefined when none is close: compared whole and,
 * for a name given without its sector (`transactions`), against each candidate's part after its sector.
 * Close means at most a third of the candidate's letters differ.
 */
export function closestName(name: string, candidates: readonly string[]): string | undefined {
  let best: { candidate: string; score: number } | undefined;
  for (const candidate of candidates) {
    const tail = candidate.slice(candidate.indexOf('.') + 1);
    const score = Math.min(distance(name, candidate), distance(name, tail));
    if (score <= Math.max(1, Math.floor(tail.length / 3)) && (best === undefined || score < best.score)) best = { candidate, score };
  }
  return best?.candidate;
}

/** Candidates ordered by how close each is to the name, the closest first (ties keep their order). */
export function byCloseness(name: string, candidates: readonly string[]): string[] {
  return candidates
    .map((candidate, i) => ({ candidate, i, score: distance(name, candidate) }))
    .sort((a, b) => a.score - b.score || a.i - b.i)
    .map(({ candidate }) => candidate);
}
