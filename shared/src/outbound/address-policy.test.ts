import { describe, expect, it } from 'vitest';
import { AddressRefusedError } from './address-refused-error.ts';
import { createAddressPolicy, gatewayOwnPorts, type ResolvedAddress } from './address-policy.ts';

// Issue 32, outbound policy for source addresses: link-local and metadata addresses in every spelling, the
// gateway's own ports on this machine and schemes other than http(s) are refused; loopback and private
// ranges stay allowed (a home hub lives there). The ports are the spec's defaults (spec 1 item 2: 8787, 8788).
const LOCAL_ADDRESS = '192.0.2.2';
const policy = createAddressPolicy({
  ownPorts: gatewayOwnPorts({ REST_PORT: 8787, MCP_HTTP_PORT: 8788 }),
  localAddresses: () => ['127.0.0.1', '::1', LOCAL_ADDRESS, 'fe80::1%eth0'],
  lookup: async (hostname) => NAMES[hostname] ?? [],
});
const NAMES: Record<string, ResolvedAddress[]> = {
  'hub.lan': [{ address: '192.168.1.20', family: 4 }],
  'metadata.example': [{ address: '169.254.169.254', family: 4 }],
  'twice.example': [
    { address: '192.168.1.20', family: 4 },
    { address: 'fd00:ec2::254', family: 6 },
  ],
  'mapped.example': [{ address: '::ffff:169.254.169.254', family: 6 }],
  'self.example': [{ address: LOCAL_ADDRESS, family: 4 }],
};

/** Every refused form the issue names, and the metadata addresses outside 169.254/16 and fe80::/10. */
const REFUSED_FORMS: Array<[string, RegExp]> = [
  ['http://169.254.169.254/latest/meta-data/', /169\.254\.169\.254 is a link-local address/],
  ['http://169.254.10.1:8123/', /link-local/],
  ['http://2852039166/', /169\.254\.169\.254 is a link-local/],
  ['http://0xa9fea9fe/', /169\.254\.169\.254 is a link-local/],
  ['http://0251.0376.0251.0376/', /169\.254\.169\.254 is a link-local/],
  ['http://169.254.43518/', /169\.254\.169\.254 is a link-local/],
  ['http://[::ffff:169.254.169.254]/', /169\.254\.169\.254 written as IPv6, a link-local/],
  ['http://[::ffff:a9fe:a9fe]/', /169\.254\.169\.254 written as IPv6, a link-local/],
  ['http://[::ffff:0:a9fe:a9fe]/', /written as IPv6, a link-local/],
  ['http://[::169.254.169.254]/', /written as IPv6, a link-local/],
  ['http://[64:ff9b::a9fe:a9fe]/', /written as IPv6, a link-local/],
  ['http://[2002:a9fe:a9fe::1]/', /written as IPv6, a link-local/],
  ['http://[fe80::1]:8123/', /fe80::1 is a link-local address/],
  ['http://[fd00:ec2::254]/', /AWS's metadata service/],
  ['http://[fd20:ce::254]/', /Google Cloud's metadata service/],
  ['http://100.100.100.200/', /Alibaba Cloud's metadata service/],
  ['http://192.0.0.192/', /Oracle Cloud's metadata service/],
  ['http://168.63.129.16/', /Azure's host endpoint/],
  ['http://metadata.google.internal/', /name of a cloud metadata service/],
  ['http://0.0.0.0:8123/', /unspecified address/],
  ['http://0:8123/', /unspecified address/],
  ['http://[::]:8123/', /unspecified address/],
  ['http://127.0.0.1:8787/', /127\.0\.0\.1:8787 is this gateway's own Console port \(REST_PORT\)/],
  ['http://localhost:8788/', /localhost:8788 is this gateway's own agent port \(MCP_HTTP_PORT\)/],
  ['http://[::1]:8787/', /::1:8787 is this gateway's own Console port/],
  ['http://[::ffff:127.0.0.1]:8788/', /own agent port/],
  ['http://127.1:8787/', /own Console port/],
  [`http://${LOCAL_ADDRESS}:8787/`, /192\.0\.2\.2:8787 is this gateway's own Console port/],
  ['ftp://hub.lan/', /ftp is not http or https/],
  ['file:///etc/passwd', /file is not http or https/],
  ['gopher://hub.lan:70/', /gopher is not http or https/],
  ['data:text/plain,hello', /data is not http or https/],
];

const ALLOWED = [
  'http://127.0.0.1:8123',
  'http://localhost:8123',
  'http://[::1]:8123',
  'http://192.168.1.20:8123',
  'http://10.0.0.5:8123',
  'http://172.16.4.1:8123',
  'http://[fd12:3456::5]:8123',
  'http://100.64.1.2:8123',
  'http://homeassistant.local:8123',
  'https://bridge.simplefin.org/simplefin',
  // Another machine on the network may serve 8787 of its own: only this machine's addresses are the gateway's.
  'http://192.168.1.20:8787',
];

describe('the outbound policy for source addresses (issue 32)', () => {
  describe('an address as written (at save)', () => {
    it.each(REFUSED_FORMS)('refuses %s', (url, reason) => {
      expect(policy.urlRefusal(url)).toMatch(reason);
    });

    it.each(ALLOWED)('allows %s', (url) => {
      expect(policy.urlRefusal(url)).toBeUndefined();
    });

    it('leaves a name to the connect-time check, except a metadata service\'s own name', () => {
      expect(policy.urlRefusal('http://metadata.example/')).toBeUndefined();
      expect(policy.urlRefusal('http://instance-data/')).toMatch(/cloud metadata service/);
    });
  });

  describe('an address as resolved (at connect)', () => {
    it.each(REFUSED_FORMS.filter(([url]) => /^https?:/.test(url)))('refuses %s before any connection', async (url, reason) => {
      await expect(policy.checkUrl(url)).rejects.toThrow(reason);
    });

    it('refuses a name that resolves to a metadata address, naming the name and the address', async () => {
      const refusal = policy.checkUrl('http://metadata.example:8123/api/');
      await expect(refusal).rejects.toBeInstanceOf(AddressRefusedError);
      await expect(refusal).rejects.toThrow('the address http://metadata.example:8123 was refused: metadata.example resolves to 169.254.169.254: 169.254.169.254 is a link-local address');
    });

    it('refuses a name when any one of its addresses is refused, since the resolver may hand out any', async () => {
      await expect(policy.checkedAddresses('twice.example', 443, 'https://twice.example')).rejects.toThrow(/resolves to fd00:ec2::254: fd00:ec2::254 is AWS's metadata service/);
    });

    it('refuses a name that resolves to an IPv4-mapped metadata address', async () => {
      await expect(policy.checkedAddresses('mapped.example', 80, 'http://mapped.example')).rejects.toThrow(/written as IPv6/);
    });

    it('refuses a name that resolves to one of this machine\'s addresses on the gateway\'s own port, and allows its other ports', async () => {
      await expect(policy.checkedAddresses('self.example', 8787, 'http://self.example:8787')).rejects.toThrow(/self\.example resolves to 192\.0\.2\.2: 192\.0\.2\.2:8787 is this gateway's own Console port/);
      await expect(policy.checkedAddresses('self.example', 8123, 'http://self.example:8123')).resolves.toEqual([{ address: LOCAL_ADDRESS, family: 4 }]);
    });

    it('returns the checked addresses of a private name to dial, and the literal itself for an address', async () => {
      await expect(policy.checkedAddresses('hub.lan', 8123, 'http://hub.lan:8123')).resolves.toEqual([{ address: '192.168.1.20', family: 4 }]);
      await expect(policy.checkedAddresses('[::1]', 8123, 'http://[::1]:8123')).resolves.toEqual([{ address: '::1', family: 6 }]);
    });

    it('fails as a lookup does for a name with no address (an outage, not a refusal)', async () => {
      const failure = await policy.checkedAddresses('nowhere.example', 80, 'http://nowhere.example').catch((error: unknown) => error);
      expect(failure).not.toBeInstanceOf(AddressRefusedError);
      expect(failure).toMatchObject({ code: 'ENOTFOUND' });
    });
  });

  it('counts a port of 0 (any free port) as none of the gateway\'s', () => {
    expect(gatewayOwnPorts({ REST_PORT: 0, MCP_HTTP_PORT: 8788 })).toEqual([{ port: 8788, name: 'agent port (MCP_HTTP_PORT)' }]);
  });
});
