import { createOutbound, DEFAULT_GATEWAY_PORTS, gatewayOwnPorts, type Outbound } from '@pcg/shared/outbound';

/**
 * The outbound policy for the addresses an operator or a source gave (the hub's, the bank-link bridge's;
 * issue 32), with the gateway's own ports from the settings. Connectors of fixed provider hosts do not
 * use it; iCloud keeps its own guard (spec 1 item 9).
 */
export function createSourceOutbound(ports: { REST_PORT: number; MCP_HTTP_PORT: number } = DEFAULT_GATEWAY_PORTS): Outbound {
  return createOutbound({ ownPorts: gatewayOwnPorts(ports) });
}
