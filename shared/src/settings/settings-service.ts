import type { CommonQueryMethods } from 'slonik';
import { CONSOLE_ACTS, OPERATOR_AGENT_ID, type AuditRecorder } from '../audit/index.ts';
import { ValidationError } from '../http/index.ts';
import type { Logger } from '../logger/index.ts';
import { mcpResourceOf, parsePublicOrigin } from './public-origin.ts';
import type { SettingsEventPublisher } from './settings-events.ts';
import { createSettingsQueries } from './settings-queries.ts';
import { PUBLIC_ORIGIN_SETTING, type SettingsView } from './settings-types.ts';

export type SettingsServiceDeps = {
  db: CommonQueryMethods;
  events: SettingsEventPublisher;
  audit: AuditRecorder;
  log: Logger;
};

/** The audited Console act of saving or clearing the public origin (spec 6, Console acts). */
export const SET_PUBLIC_ORIGIN_TOOL = CONSOLE_ACTS.setPublicOrigin;

const viewOf = (publicOrigin: string | null): SettingsView => ({
  publicOrigin,
  mcpUrl: publicOrigin === null ? null : mcpResourceOf(publicOrigin),
});

/**
 * The Console's settings: the public origin that switches the OAuth bridge on (spec 5 rule 8). A saved
 * change is announced on the settings channel and leaves one audit row; a refused one leaves neither.
 */
export function createSettingsService({ db, events, audit, log }: SettingsServiceDeps) {
  const queries = createSettingsQueries(db);

  /** The change is committed: a Redis that is away must not turn it into an error. */
  async function announce(): Promise<void> {
    try {
      await events.publish({ setting: PUBLIC_ORIGIN_SETTING });
    } catch (error) {
      log.warn({ setting: PUBLIC_ORIGIN_SETTING, err: error }, 'settings event not published');
    }
  }

  const record = (publicOrigin: string | null, outcome: 'ok' | 'error', requestId?: string) =>
    audit.record({
      agentId: OPERATOR_AGENT_ID,
      tool: SET_PUBLIC_ORIGIN_TOOL,
      sector: null,
      decision: 'allow',
      args: { publicOrigin },
      outcome,
      requestId,
    });

  return {
    async read(): Promise<SettingsView> {
      return viewOf(await queries.readPublicOrigin());
    },

    /**
     * Validates and stores the origin (null switches the bridge off). An invalid origin is a
     * `ValidationError` naming the origin to save, and the stored value is unchanged.
     */
    async savePublicOrigin(input: string | null, requestId?: string): Promise<SettingsView> {
      let origin: string | null = null;
      if (input !== null) {
        const parsed = parsePublicOrigin(input);
        if (!parsed.ok) throw new ValidationError(parsed.message);
        origin = parsed.origin;
      }
      try {
        await queries.writePublicOrigin(origin);
      } catch (error) {
        record(origin, 'error', requestId);
        throw error;
      }
      log.info({ setting: PUBLIC_ORIGIN_SETTING, publicOrigin: origin }, 'setting changed');
      await announce();
      record(origin, 'ok', requestId);
      return viewOf(origin);
    },
  };
}

export type SettingsService = ReturnType<typeof createSettingsService>;
