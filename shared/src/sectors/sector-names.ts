import { z } from 'zod';

/** The six fixed sectors (spec 2.1). None can be added, renamed or split. */
export const SECTORS = ['finance', 'health', 'mail', 'contacts', 'calendar', 'home'] as const;

export const SectorSchema = z.enum(SECTORS);
export type Sector = z.infer<typeof SectorSchema>;

export function isSector(value: unknown): value is Sector {
  return typeof value === 'string' && (SECTORS as readonly string[]).includes(value);
}
