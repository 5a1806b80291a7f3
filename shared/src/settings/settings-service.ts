import type { CommonQueryMethods } from 'slonik';
import { CONSOLE_ACTS, OPERATOR_AGENT_ID, type AuditRecorder } from '../audit/index.ts';
import { ValidationError } from '../errors/index.ts';
import type { Logger } from '../logger/index.ts';
import { mcpResourceOf, parsePublicOrigin } from './public-origin.ts';
import type { SettingsEventPublisher } from './settings-events.ts';
import { createSettingsQueries } from './settings-queries.ts';
import { PUBLIC_ORIGIN_SETTING, TIME_ZONE_SETTING, type SettingName, type SettingsView, type UpdateSettingsInput } from './settings-types.ts';
import { canonicalTimeZone, createTimeZoneQueries, createTimeZoneReader, machineTimeZone, TIME_ZONE_RULES, type PersonTimeZone } from './time-zone.ts';

export type SettingsServiceDeps = {
  db: CommonQueryMethods;
  events: SettingsEventPublisher;
  audit: AuditRecorder;
  log: Logger;
  /** The machine's zone, the default of the person's; tests fix it. */
  machineZone?: () => string;
};

/** The audited Console act of saving or clearing the public origin (spec 6, Console acts). */
export const SET_PUBLIC_ORIGIN_TOOL = CONSOLE_ACTS.setPublicOrigin;
/** The audited Console act of saving or clearing the person's time zone. */
export const SET_TIME_ZONE_TOOL = CONSOLE_ACTS.setTimeZone;

const viewOf = (publicOrigin: string | null, zone: PersonTimeZone): SettingsView => ({
  publicOrigin,
  mcpUrl: publicOrigin === null ? null : mcpResourceOf(publicOrigin),
  timeZone: zone.zone,
  timeZoneSource: zone.source,
});

/**
 * The Console's settings: the public origin that switches the OAuth bridge on (spec 5 rule 8). A saved
 * change is announced on the settings channel and leaves one audit row; a refused one leaves neither.
 */
export function createSettingsService({ db, events, audit, log, machineZone = machineTimeZone }: SettingsServiceDeps) {
  const queries = createSettingsQueries(db);
  const zones = createTimeZoneQueries(db);
  const personZone = createTimeZoneReader(db, machineZone);

  /** The change is committed: a Redis that is away must not turn it into an error. */
  async function announce(setting: SettingName): Promise<void> {
    try {
      await events.publish({ setting });
    } catch (error) {
      log.warn({ setting, err: error }, 'settings event not published');
    }
  }

  const act = (tool: string, args: Record<string, unknown>, outcome: 'ok' | 'error', requestId?: string) =>
    audit.record({ agentId: OPERATOR_AGENT_ID, tool, sector: null, decision: 'allow', args, outcome, requestId });
  const record = (publicOrigin: string | null, outcome: 'ok' | 'error', requestId?: string) => act(SET_PUBLIC_ORIGIN_TOOL, { publicOrigin }, outcome, requestId);

  const read = async (): Promise<SettingsView> => viewOf(await queries.readPublicOrigin(), await personZone());

  /**
   * Saves the person's IANA time zone (null goes back to the machine's). An unknown name is a
   * `ValidationError` naming the form to send, and the stored value is unchanged.
   */
  async function saveTimeZone(input: string | null, requestId?: string): Promise<SettingsView> {
    let zone: string | null = null;
    if (input !== null) {
      zone = canonicalTimeZone(input) ?? null;
      if (zone === null) throw new ValidationError(TIME_ZONE_RULES.notAZone(input));
    }
    try {
      await zones.write(zone);
    } catch (error) {
      act(SET_TIME_ZONE_TOOL, { timeZone: zone }, 'error', requestId);
      throw error;
    }
    log.info({ setting: TIME_ZONE_SETTING, timeZone: zone }, 'setting changed');
    await announce(TIME_ZONE_SETTING);
    act(SET_TIME_ZONE_TOOL, { timeZone: zone }, 'ok', requestId);
    return read();
  }

  /**
   * Validates and stores the origin (null switches the bridge off). An invalid origin is a
   * `ValidationError` naming the origin to save, and the stored value is unchanged.
   */
  async function savePublicOrigin(input: string | null, requestId?: string): Promise<SettingsView> {
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
    await announce(PUBLIC_ORIGIN_SETTING);
    record(origin, 'ok', requestId);
    return read();
  }

  return {
    read,
    savePublicOrigin,
    saveTimeZone,

    /**
     * `PUT /api/settings`: each field present is changed, the others kept. Both values are checked
     * before either is stored, so a refused one changes nothing.
     */
    async update(input: UpdateSettingsInput, requestId?: string): Promise<SettingsView> {
      if (typeof input.timeZone === 'string' && !canonicalTimeZone(input.timeZone)) throw new ValidationError(TIME_ZONE_RULES.notAZone(input.timeZone));
      if (typeof input.publicOrigin === 'string') {
        const parsed = parsePublicOrigin(input.publicOrigin);
        if (!parsed.ok) throw new ValidationError(parsed.message);
      }
      if (input.publicOrigin !== undefined) await savePublicOrigin(input.publicOrigin, requestId);
      if (input.timeZone !== undefined) await saveTimeZone(input.timeZone, requestId);
      return read();
    },
  };
}

export type SettingsService = ReturnType<typeof createSettingsService>;
