import { demoEndpointsKey, findProvider, GMAIL_API_BASE, type DemoEndpoints, GOOGLE_CALENDAR_API_BASE, GOOGLE_PEOPLE_API_BASE, MICROSOFT_GRAPH_API_BASE, PROVIDERS, realOrigins, WHOOP_API_BASE, type RebaseUrl } from '@pcg/shared/providers';
import type { Connector } from './connector-types.ts';
import type { CalendarWindow } from './google/calendar-sync.ts';
import { createGmailConnector } from './gmail/gmail-connector.ts';
import { createGoogleConnector } from './google/google-connector.ts';
import { healthAutoExportConnector } from './health-auto-export/health-auto-export-connector.ts';
import type { Outbound } from '@pcg/shared/outbound';
import { createHomeAssistantConnector } from './home-assistant/home-assistant-connector.ts';
import { createSourceOutbound } from './kit/source-outbound.ts';
import { createMicrosoftConnector } from './microsoft/microsoft-connector.ts';
import { createPlaidConnector, type PlaidConnectorOptions } from './plaid/plaid-connector.ts';
import { createSimplefinConnector } from './simplefin/simplefin-connector.ts';
import { createWhoopConnector } from './whoop/whoop-connector.ts';
import { createICloudConnector, type ICloudConnectorOptions } from './icloud/icloud-connector.ts';

export type ConnectorRegistry = {
  /** The provider's connector; for a demo sign-in's connection (`demoEndpoints`), one pointed at that sign-in's stand-ins. */
  get(provider: string, demoEndpoints?: DemoEndpoints | null): Connector | undefined;
  all(): readonly Connector[];
};

/** Without the saved application (no database at hand), the aggregator's syncs say so. */
const NO_PLAID_APP = async () => null;

/** What some connectors need besides their source's address. */
export type ConnectorOptions = {
  calendarWindow?: CalendarWindow;
  icloud?: ICloudConnectorOptions;
  /** `loadApp` reads the aggregator application the operator saved (the sync-worker's opens it from `provider_apps`). */
  plaid?: Omit<PlaidConnectorOptions, 'rebaseUrl'>;
  /** The outbound policy for the addresses an operator or a source gave (the hub's, the bridge's); default with the default ports. */
  outbound?: Outbound;
};

/** One connector per provider of the catalogue, each pointed at its source (or the configured stand-in). */
export function defaultConnectors(rebaseUrl: RebaseUrl = realOrigins, options: ConnectorOptions = {}): Connector[] {
  const { calendarWindow, icloud = {}, plaid = { loadApp: NO_PLAID_APP }, outbound = createSourceOutbound() } = options;
  return [
    createPlaidConnector({ ...plaid, rebaseUrl }),
    createHomeAssistantConnector({ outbound }),
    healthAutoExportConnector,
    createMicrosoftConnector({ apiBase: rebaseUrl(MICROSOFT_GRAPH_API_BASE), window: calendarWindow }),
    createSimplefinConnector({ outbound }),
    createICloudConnector({ window: calendarWindow, ...icloud }),
    createWhoopConnector({ apiBase: rebaseUrl(WHOOP_API_BASE) }),
    createGoogleConnector({ calendarBase: rebaseUrl(GOOGLE_CALENDAR_API_BASE), peopleBase: rebaseUrl(GOOGLE_PEOPLE_API_BASE), window: calendarWindow }),
    createGmailConnector({ apiBase: rebaseUrl(GMAIL_API_BASE) }),
  ];
}

/** Every provider kind's connector at its real address; tests add a connector for a provider of their own to this list. */
export const CONNECTORS: readonly Connector[] = defaultConnectors();

/**
 * The connectors by provider kind. Refuses at boot a duplicate, a connector for an unknown provider,
 * a provider without a connector, and any read-only provider that declares actions (spec 1.8).
 */
export function createConnectorRegistry(connectors: readonly Connector[] = defaultConnectors(), forDemo?: (demoEndpoints: DemoEndpoints) => readonly Connector[]): ConnectorRegistry {
  const byKind = new Map<string, Connector>();
  for (const connector of connectors) {
    const kind = connector.provider.kind;
    if (byKind.has(kind)) throw new Error(`two connectors for provider '${kind}'`);
    if (!findProvider(kind)) throw new Error(`connector for unknown provider '${kind}'`);
    const declaresActions = connector.actions === 'discovered' || connector.actions.length > 0;
    if (declaresActions && !connector.provider.sectors.includes('home')) throw new Error(`provider '${kind}' is read-only and may declare no actions`);
    if (declaresActions && !connector.invokeAction) throw new Error(`provider '${kind}' declares actions but cannot invoke them`);
    if (connector.provider.signIn !== 'push' && !connector.sync) throw new Error(`provider '${kind}' pulls but has no sync`);
    byKind.set(kind, connector);
  }
  for (const provider of PROVIDERS) {
    if (!byKind.has(provider.kind)) throw new Error(`no connector for provider '${provider.kind}'`);
  }
  // A demo sign-in's stand-ins (issue 42): the same connectors built once per set of stand-ins; without a
  // builder (a test's own list), a demo connection gets no connector and its sync says so.
  const demoSets = new Map<string, ConnectorRegistry>();
  const forStandIns = (demoEndpoints: DemoEndpoints): ConnectorRegistry | undefined => {
    if (!forDemo) return undefined;
    const key = demoEndpointsKey(demoEndpoints);
    let set = demoSets.get(key);
    if (!set) {
      set = createConnectorRegistry(forDemo(demoEndpoints));
      demoSets.set(key, set);
    }
    return set;
  };
  return {
    get: (provider, demoEndpoints) => (demoEndpoints ? forStandIns(demoEndpoints)?.get(provider) : byKind.get(provider)),
    all: () => [...byKind.values()],
  };
}
