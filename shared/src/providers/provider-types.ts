import type { z } from 'zod';
import type { Sector } from '../sectors/index.ts';

/**
 * How a connection of a provider gets its data:
 * - `token`: the operator pastes a credential (a hub's long-lived token); the sync-worker pulls on a schedule.
 * - `push`: the device pushes to `POST /api/ingest/:connectionId` with a per-connection secret; nothing is pulled.
 */
export type SignInKind = 'token' | 'push';

/**
 * What every process may know about a provider kind: its sectors, objects and how it signs in. The
 * behaviour (sync, live reads, actions) lives in the sync-worker's connector for the same `kind`.
 */
export type ProviderDescriptor = {
  kind: string;
  displayName: string;
  /** Sectors one sign-in creates connections for (spec 2.5). */
  sectors: readonly Sector[];
  /** Catalogue objects its connections fill. */
  objects: readonly string[];
  signIn: SignInKind;
  /** Default sync interval of a new connection; null for push providers (never scheduled). */
  defaultSyncIntervalMinutes: number | null;
  /** Validates the credentials the operator supplies for a `token` provider; sealed before storage. */
  credentialsSchema?: z.ZodType;
};
