import { findProvider, PROVIDERS } from '@pcg/shared/providers';
import type { Connector } from './connector-types.ts';
import { healthAutoExportConnector } from './health-auto-export/health-auto-export-connector.ts';
import { homeAssistantConnector } from './home-assistant/home-assistant-connector.ts';
import { icloudConnector } from './icloud/icloud-connector.ts';

export type ConnectorRegistry = {
  get(provider: string): Connector | undefined;
  all(): readonly Connector[];
};

/**
 * The connectors by provider kind. Refuses at boot a duplicate, a connector for an unknown provider,
 * a provider without a connector, and any read-only provider that declares actions (spec 1.8).
 */
export function createConnectorRegistry(connectors: readonly Connector[] = [homeAssistantConnector, healthAutoExportConnector, icloudConnector]): ConnectorRegistry {
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
  return {
    get: (provider) => byKind.get(provider),
    all: () => [...byKind.values()],
  };
}
