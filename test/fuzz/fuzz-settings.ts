import { z } from 'zod';

/**
 * How long and with which seeds the fuzz suite runs. Inside `npm test` it is bounded: a fixed seed and one
 * random one, a few dozen cases per surface. `npm run fuzz` sets FUZZ_SECONDS for a long run; FUZZ_SEED
 * replays a reported run.
 */
const FuzzEnvSchema = z.object({
  FUZZ_SECONDS: z.coerce.number().int().min(1).max(86_400).optional(),
  FUZZ_SEED: z.coerce.number().int().optional(),
  FUZZ_RUNS: z.coerce.number().int().min(1).max(1_000_000).optional(),
});

export type FuzzPlan = { seeds: number[]; runsPerSeed: number; secondsPerSurface: number | undefined };

/** The seed every bounded run starts with, so a failure in CI is replayed by anyone. */
export const FIXED_SEED = 20_261_123;

export function fuzzPlan(env: NodeJS.ProcessEnv, surfaces: number): FuzzPlan {
  const parsed = FuzzEnvSchema.parse(env);
  const seeds = parsed.FUZZ_SEED !== undefined ? [parsed.FUZZ_SEED] : [FIXED_SEED, Math.floor(Math.random() * 2 ** 31)];
  if (parsed.FUZZ_SECONDS !== undefined) {
    return { seeds: parsed.FUZZ_SEED !== undefined ? seeds : [Math.floor(Math.random() * 2 ** 31)], runsPerSeed: Number.MAX_SAFE_INTEGER, secondsPerSurface: parsed.FUZZ_SECONDS / surfaces };
  }
  return { seeds, runsPerSeed: parsed.FUZZ_RUNS ?? 150, secondsPerSurface: undefined };
}
