/** A small deterministic generator (mulberry32), so the demo data is the same on every run. */
export function createRandom(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (min: number, max: number) => min + Math.floor(next() * (max - min + 1)),
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T,
    chance: (probability: number) => next() < probability,
    normal: (mean: number, spread: number) => mean + spread * (next() + next() + next() - 1.5) * 1.15,
  };
}
export type Random = ReturnType<typeof createRandom>;

export const DAY_MS = 86_400_000;
export const isoDate = (time: number) => new Date(time).toISOString().slice(0, 10);
export const isoInstant = (time: number) => new Date(time).toISOString();
/** Midnight UTC of the day `daysAgo` before `end`. */
export const dayStart = (end: number, daysAgo: number) => Math.floor(end / DAY_MS) * DAY_MS - daysAgo * DAY_MS;
