import { HEALTH_AUTO_EXPORT } from '@pcg/shared/providers';
import type { Connector } from '../connector-types.ts';

/**
 * The phone health app pushes its data to `POST /api/ingest/:connectionId` (the Console parses the
 * format, see `@pcg/shared/ingest`); nothing is pulled, nothing can be read live, and it offers no action.
 */
export const healthAutoExportConnector: Connector = {
  provider: HEALTH_AUTO_EXPORT,
  actions: [],
};
