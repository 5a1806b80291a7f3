const DAY_S = 86_400;

/**
 * The longest span one `/accounts` request asks for (end-date − start-date, or now − start-date). The
 * Bridge cuts a request over 90 days to its most recent ~90 and adds the `gen.api` entry "Requested date
 * range exceeds limit of 90 days and was capped." (an HTTP 200 that looks complete), and already warns
 * above 45 days ("exceeds recommended range of 45 days. In the future, this may be capped."), both
 * observed on the live Bridge (third-party reports: securo-finance/securo#919, firefly-iii/firefly-iii#12128,
 * and a client's notes of 2026-09). A day under the warning, so a request never draws either entry.
 */
export const MAX_SPAN_DAYS = 44;
/** History asked for on the first sync: two requests. */
export const FIRST_WINDOW_DAYS = 2 * MAX_SPAN_DAYS;
/** Requests one sync may make; a longer gap is fetched over the next syncs (the Bridge expects ≤ 24 a day, reference §2.4). */
export const MAX_REQUESTS_PER_SYNC = 4;

/** One request's window in epoch seconds: `end` undefined asks up to now (the balances of now come with it). */
export type Chunk = { start: number; end: number | undefined };

/** Midnight UTC of the day holding `seconds`, so "posted on or after the start" and "posted_on ≥ the start's date" are the same rows. */
export const dayStart = (seconds: number): number => Math.floor(seconds / DAY_S) * DAY_S;

/** Where a sync's window starts: `OVERLAP_DAYS` before what was fetched last time, or the first window. */
export function windowStart(fetchedThroughMs: number | undefined, nowMs: number, overlapDays: number): number {
  if (fetchedThroughMs === undefined) return dayStart(nowMs / 1000) - (FIRST_WINDOW_DAYS - 1) * DAY_S;
  return dayStart(fetchedThroughMs / 1000 - overlapDays * DAY_S);
}

/**
 * The window from `start` to now cut into requests of at most `MAX_SPAN_DAYS`, oldest first, at most
 * `MAX_REQUESTS_PER_SYNC` of them; the last one asks up to now when it can reach it.
 */
export function planChunks(start: number, nowS: number): Chunk[] {
  const span = MAX_SPAN_DAYS * DAY_S;
  const chunks: Chunk[] = [];
  for (let from = start; chunks.length < MAX_REQUESTS_PER_SYNC; from += span) {
    if (nowS - from <= span) {
      chunks.push({ start: from, end: undefined });
      break;
    }
    chunks.push({ start: from, end: from + span });
  }
  return chunks;
}
