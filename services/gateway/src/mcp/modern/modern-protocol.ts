import type { IncomingHttpHeaders } from 'node:http';
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/server';
import { isPlainObject } from '../plain-object.ts';
import { PARAM_HEADERS } from './param-headers.ts';

/** The stateless revision the modern lane serves (design 8.1). */
export const MODERN_PROTOCOL_VERSION = '2026-07-28';

/** The handshake versions (design 8.1: 2024-11-05 … 2025-11-25), served by the session lane. */
export const HANDSHAKE_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'] as const;

/** What `server/discover` and every `UnsupportedProtocolVersionError` list: both eras, newest first. */
export const SUPPORTED_VERSIONS = [MODERN_PROTOCOL_VERSION, ...HANDSHAKE_VERSIONS] as const;

/** The reserved `_meta` keys of revision 2026-07-28. */
export const META_KEYS = {
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  clientInfo: 'io.modelcontextprotocol/clientInfo',
  serverInfo: 'io.modelcontextprotocol/serverInfo',
  subscriptionId: 'io.modelcontextprotocol/subscriptionId',
} as const;

/** Routing only: a header naming any version the session lane's SDK negotiates stays on the session lane. */
const HANDSHAKE = new Set<string>([...HANDSHAKE_VERSIONS, ...SUPPORTED_PROTOCOL_VERSIONS]);

function metaOf(body: unknown): Record<string, unknown> | undefined {
  if (!isPlainObject(body) || !isPlainObject(body.params)) return undefined;
  const meta = body.params._meta;
  return isPlainObject(meta) ? meta : undefined;
}

/** A header's value when it was sent once; a header sent twice counts as malformed (`null`). */
function headerValue(headers: IncomingHttpHeaders, name: string): string | null | undefined {
  const value = headers[name];
  if (value === undefined) return undefined;
  return typeof value === 'string' ? stripOws(value) : null;
}

/** RFC 9110 5.5: optional whitespace around a field value is not part of it. */
function stripOws(value: string): string {
  return value.replace(/^[ \t]+|[ \t]+$/g, '');
}

/**
 * Design 8.1: a POST is of the 2026-07-28 era when its body's `params._meta` carries the protocol version key,
 * or its `MCP-Protocol-Version` header names a version that is not a handshake version. Anything else is the
 * 2025 era and is answered exactly as before.
 */
export function declaresModernEra(headers: IncomingHttpHeaders, body: unknown): boolean {
  const meta = metaOf(body);
  if (meta !== undefined && META_KEYS.protocolVersion in meta) return true;
  const version = headerValue(headers, 'mcp-protocol-version');
  return typeof version === 'string' && !HANDSHAKE.has(version);
}

/** The envelope a modern request must carry: its protocol version and the client's capabilities. */
export type Envelope = { protocolVersion: string; clientCapabilities: Record<string, unknown> };

/** The envelope, or the -32602 text naming what is missing or malformed. */
export function envelopeOf(body: Record<string, unknown>): Envelope | { issue: string } {
  if (body.params !== undefined && !isPlainObject(body.params)) return { issue: 'params: expected an object' };
  const meta = metaOf(body);
  if (!meta) return { issue: `params._meta: required, with ${META_KEYS.protocolVersion} and ${META_KEYS.clientCapabilities}` };
  const protocolVersion = meta[META_KEYS.protocolVersion];
  if (typeof protocolVersion !== 'string') return { issue: `params._meta["${META_KEYS.protocolVersion}"]: ${protocolVersion === undefined ? 'required' : 'expected a string'}` };
  const clientCapabilities = meta[META_KEYS.clientCapabilities];
  if (!isPlainObject(clientCapabilities)) return { issue: `params._meta["${META_KEYS.clientCapabilities}"]: ${clientCapabilities === undefined ? 'required' : 'expected an object'}` };
  const clientInfo = meta[META_KEYS.clientInfo];
  if (clientInfo !== undefined && !(isPlainObject(clientInfo) && typeof clientInfo.name === 'string' && typeof clientInfo.version === 'string')) {
    return { issue: `params._meta["${META_KEYS.clientInfo}"]: expected an object with a string name and version` };
  }
  return { protocolVersion, clientCapabilities };
}

const SENTINEL_PREFIX = '=?base64?';
const SENTINEL_SUFFIX = '?=';
const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
/** RFC 9110 field-value characters: visible ASCII, space and tab. */
const FIELD_VALUE = /^[\x20-\x7e\t]*$/;

/** A mirrored value as the client meant it: the Base64 sentinel decoded; undefined when it cannot be. */
export function decodeHeaderValue(value: string): string | undefined {
  if (!FIELD_VALUE.test(value)) return undefined;
  if (!(value.startsWith(SENTINEL_PREFIX) && value.endsWith(SENTINEL_SUFFIX) && value.length >= SENTINEL_PREFIX.length + SENTINEL_SUFFIX.length)) return value;
  const encoded = value.slice(SENTINEL_PREFIX.length, value.length - SENTINEL_SUFFIX.length);
  if (!CANONICAL_BASE64.test(encoded)) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(encoded, 'base64'));
  } catch {
    return undefined;
  }
}

/** Which body field `Mcp-Name` mirrors, per method (only tools/call is served here; the others are refused later). */
const NAME_SOURCE: Record<string, string> = { 'tools/call': 'name', 'prompts/get': 'name', 'resources/read': 'uri' };

/**
 * Revision 2026-07-28, Streamable HTTP "Server Validation": the `MCP-Protocol-Version`, `Mcp-Method` and
 * `Mcp-Name` headers must be present and match the body. Returns the -32020 detail, or undefined.
 */
export function standardHeaderMismatch(headers: IncomingHttpHeaders, body: Record<string, unknown>, envelope: Envelope): string | undefined {
  const version = headerValue(headers, 'mcp-protocol-version');
  if (version === undefined) return 'the MCP-Protocol-Version header is required';
  if (version !== envelope.protocolVersion) return `MCP-Protocol-Version header '${String(version)}' does not match the body's protocol version '${envelope.protocolVersion}'`;
  const method = body.method as string;
  const methodHeader = headerValue(headers, 'mcp-method');
  if (methodHeader === undefined) return 'the Mcp-Method header is required';
  if (methodHeader !== method) return `Mcp-Method header '${String(methodHeader)}' does not match the body's method '${method}'`;
  const field = Object.hasOwn(NAME_SOURCE, method) ? NAME_SOURCE[method] : undefined;
  const bodyName = field !== undefined && isPlainObject(body.params) ? body.params[field] : undefined;
  if (typeof bodyName !== 'string') return undefined;
  const nameHeader = headerValue(headers, 'mcp-name');
  if (nameHeader === undefined) return 'the Mcp-Name header is required';
  const decoded = nameHeader === null ? undefined : decodeHeaderValue(nameHeader);
  if (decoded === undefined) return 'the Mcp-Name header is not a valid header value';
  if (decoded !== bodyName) return `Mcp-Name header '${decoded}' does not match the body's params.${field} '${bodyName}'`;
  return undefined;
}

/**
 * Revision 2026-07-28, "Server Behavior for Custom Headers": each argument a tool marks with `x-mcp-header`
 * that the call carries must come with its `Mcp-Param-<Name>` header, equal once decoded. An argument absent
 * or null needs no header. Returns the -32020 detail, or undefined.
 */
export function paramHeaderMismatch(headers: IncomingHttpHeaders, tool: string, args: unknown): string | undefined {
  const declared = Object.hasOwn(PARAM_HEADERS, tool) ? PARAM_HEADERS[tool] : undefined;
  if (!declared || !isPlainObject(args)) return undefined;
  for (const [property, name] of Object.entries(declared)) {
    const value = args[property];
    // Absent or null needs no header; a value no header can carry is left to the tool's own refusal.
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') continue;
    const header = `Mcp-Param-${name}`;
    const sent = headerValue(headers, header.toLowerCase());
    if (sent === undefined) return `the ${header} header is required when arguments.${property} is given`;
    const decoded = sent === null ? undefined : decodeHeaderValue(sent);
    if (decoded === undefined) return `the ${header} header is not a valid header value`;
    if (decoded !== String(value)) return `${header} header '${decoded}' does not match arguments.${property}`;
  }
  return undefined;
}
