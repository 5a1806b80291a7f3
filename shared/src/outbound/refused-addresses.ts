import ipaddr from 'ipaddr.js';

type Parsed = ipaddr.IPv4 | ipaddr.IPv6;

/**
 * Ranges no source address may resolve to, each with why, as the operator reads it. The link-local
 * ranges hold the cloud metadata services (169.254.169.254 for AWS, Google Cloud, Azure, Oracle,
 * DigitalOcean, OpenStack and Hetzner; 169.254.42.42 for Scaleway; 169.254.170.2 for AWS ECS), which hand
 * out the machine's own cloud credentials. The others are metadata addresses outside those ranges, as
 * the providers and other SSRF guards list them: AWS IMDS IPv6 fd00:ec2::254 (the AWS SDK's
 * `metadata_service/endpoint.js`), AWS EKS Pod Identity fd00:ec2::23, Google Cloud fd20:ce::254,
 * Scaleway fd00:42::42, Alibaba Cloud 100.100.100.200, Oracle Cloud Classic 192.0.0.192, Azure's
 * WireServer 168.63.129.16. A home hub never lives at any of them; loopback and private ranges stay allowed.
 */
const REFUSED: ReadonlyArray<{ cidr: string; why: string }> = [
  // RFC 1122 §3.2.1.3 / RFC 6890: "this host on this network"; Linux connects 0.0.0.0 to the machine itself.
  { cidr: '0.0.0.0/8', why: 'the unspecified address, which reaches this machine itself' },
  // RFC 3927.
  { cidr: '169.254.0.0/16', why: 'a link-local address (169.254.0.0/16), where cloud metadata services answer' },
  { cidr: '100.100.100.200/32', why: "Alibaba Cloud's metadata service" },
  { cidr: '192.0.0.192/32', why: "Oracle Cloud's metadata service" },
  { cidr: '168.63.129.16/32', why: "Azure's host endpoint (WireServer)" },
  // RFC 4291 §2.5.2.
  { cidr: '::/128', why: 'the unspecified address, which reaches this machine itself' },
  // RFC 4291 §2.5.6.
  { cidr: 'fe80::/10', why: 'a link-local address (fe80::/10)' },
  { cidr: 'fd00:ec2::254/128', why: "AWS's metadata service" },
  { cidr: 'fd00:ec2::23/128', why: "AWS's pod identity service" },
  { cidr: 'fd20:ce::254/128', why: "Google Cloud's metadata service" },
  { cidr: 'fd00:42::42/128', why: "Scaleway's metadata service" },
];

const RANGES = REFUSED.map(({ cidr, why }) => ({ range: ipaddr.parseCIDR(cidr), why }));

/** Names of metadata services, refused before any lookup (Google Cloud's, and AWS's inside a VPC). */
const METADATA_NAMES = new Set(['metadata', 'metadata.google.internal', 'metadata.goog', 'instance-data', 'instance-data.ec2.internal']);

/** `[::1]` → `::1`, trailing dot gone, lower case: a URL's hostname as an address or a name. */
export function bareHost(hostname: string): string {
  return hostname.replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '').toLowerCase();
}

/** An address in any form ipaddr.js reads (dotted, decimal, hex, octal, short, IPv6 with a zone), or undefined for a name. */
export function parseAddress(text: string): Parsed | undefined {
  const bare = bareHost(text);
  return ipaddr.isValid(bare) ? ipaddr.parse(bare) : undefined;
}

/**
 * The IPv4 address an IPv6 address carries, where one reaches (or is translated to) that IPv4 host:
 * IPv4-mapped `::ffff:a.b.c.d` (RFC 4291 §2.5.5.2, which a dual-stack socket dials as IPv4), the SIIT
 * form `::ffff:0:a.b.c.d` (RFC 6145), the deprecated IPv4-compatible `::a.b.c.d`, the NAT64 well-known
 * prefix `64:ff9b::/96` (RFC 6052) and 6to4 `2002:AABB:CCDD::/48` (RFC 3056).
 */
export function embeddedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const parts = address.parts;
  const last32 = () => ipaddr.IPv4.parse(`${parts[6]! >> 8}.${parts[6]! & 0xff}.${parts[7]! >> 8}.${parts[7]! & 0xff}`);
  if (address.isIPv4MappedAddress()) return address.toIPv4Address();
  const range = address.range();
  if (range === 'rfc6145' || range === 'rfc6052') return last32();
  if (range === '6to4') return ipaddr.IPv4.parse(`${parts[1]! >> 8}.${parts[1]! & 0xff}.${parts[2]! >> 8}.${parts[2]! & 0xff}`);
  // IPv4-compatible: 96 zero bits, then a v4 address (not :: or ::1, which are their own).
  if (parts.slice(0, 6).every((part) => part === 0) && (parts[6] !== 0 || parts[7]! > 1)) return last32();
  return undefined;
}

function rangeRefusal(address: Parsed): string | undefined {
  for (const { range, why } of RANGES) {
    if (address.kind() === range[0].kind() && address.match(range)) return why;
  }
  return undefined;
}

/**
 * Why no source may be reached at `address` (any form `parseAddress` reads), or undefined when it may.
 * An IPv6 address that carries an IPv4 one is refused when either is.
 */
export function addressRefusal(address: string): string | undefined {
  const parsed = parseAddress(address);
  if (!parsed) return undefined;
  const shown = parsed.toString();
  const direct = rangeRefusal(parsed);
  if (direct) return `${shown} is ${direct}`;
  if (parsed.kind() !== 'ipv6') return undefined;
  const inner = embeddedIPv4(parsed as ipaddr.IPv6);
  const carried = inner && rangeRefusal(inner);
  return carried ? `${shown} is ${inner.toString()} written as IPv6, ${carried}` : undefined;
}

/** Why a host name is refused without a lookup (a metadata service's own name), or undefined. */
export function nameRefusal(hostname: string): string | undefined {
  const name = bareHost(hostname);
  return METADATA_NAMES.has(name) ? `${name} is the name of a cloud metadata service` : undefined;
}

/** Loopback, in any form: 127.0.0.0/8, ::1, or an IPv6 address that carries a 127.x address. */
export function isLoopback(address: Parsed): boolean {
  if (address.kind() === 'ipv4') return address.range() === 'loopback';
  const inner = embeddedIPv4(address as ipaddr.IPv6);
  return address.range() === 'loopback' || (inner !== undefined && inner.range() === 'loopback');
}

/** The address as one spelling per address (IPv4 for a mapped one, no zone), to compare with the machine's own. */
export function canonicalAddress(address: Parsed): string {
  if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()) return (address as ipaddr.IPv6).toIPv4Address().toString();
  if (address.kind() === 'ipv6') return new ipaddr.IPv6((address as ipaddr.IPv6).parts).toString();
  return address.toString();
}
