import { z } from 'zod';

/** The six fixed sectors (spec 2.1). None can be added, renamed or split. */
export const SECTORS = ['finance', 'health', 'mail', 'contacts', 'calendar', 'home'] as const;

export const SectorSchema = z.enum(SECTORS);
export type Sector = z.infer<typeof SectorSchema>;

export function isSector(value: unknown): value is Sector {
  return typeof value === 'string' && (SECTORS as readonly string[]).includes(value);
}

/** Spec 1 item 8: the only sector with an action catalogue; every other sector is read-only. */
export const ACTION_SECTORS = ['home'] as const satisfies readonly Sector[];

export function offersActions(sector: Sector): boolean {
  return (ACTION_SECTORS as readonly Sector[]).includes(sector);
}
