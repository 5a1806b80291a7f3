import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { isIP, connect as netConnect } from 'node:net';
import { rootCertificates } from 'node:tls';
import { z } from 'zod';
import { icloudAddressProblem } from './icloud-guard.ts';
import { ICLOUD_IMAP_HOST, type PinnedImapOptions } from './icloud-imap-pin.ts';

/** Where one iCloud name is reached instead of its public address: always a loopback address. */
export type LocalTarget = { address: string; port: number };

function isLoopback(address: string): boolean {
  if (address === '::1') return true;
  return isIP(address) === 4 && address.startsWith('127.');
}

const EntrySchema = z
  .string()
  .trim()
  .transform((entry, context) => {
    const match = /^([^=\s]+)=(?:\[([^\]]+)\]|([^:\s]+)):(\d{1,5})$/.exec(entry);
    const name = match?.[1]?.toLowerCase().replace(/\.$/, '');
    const address = match?.[2] ?? match?.[3];
    const port = Number(match?.[4]);
    if (name === undefined || address === undefined) {
      context.addIssue({ code: 'custom', message: `'${entry}' is not name=address:port` });
      return z.NEVER;
    }
    if (name !== ICLOUD_IMAP_HOST && icloudAddressProblem(new URL(`https://${name}`)) !== undefined) {
      context.addIssue({ code: 'custom', message: `'${name}' is neither a *.icloud.com name nor ${ICLOUD_IMAP_HOST}` });
      return z.NEVER;
    }
    if (!isLoopback(address)) {
      context.addIssue({ code: 'custom', message: `'${address}' is not a loopback address (127.0.0.0/8 or [::1])` });
      return z.NEVER;
    }
    if (!(port >= 1 && port <= 65_535)) {
      context.addIssue({ code: 'custom', message: `port ${match?.[4]} is out of range` });
      return z.NEVER;
    }
    return [name, { address, port }] as const;
  });

/**
 * `ICLOUD_RESOLVE`: `name=address:port` pairs, comma-separated, that reach iCloud names on this machine
 * (a local CalDAV/CardDAV or IMAP server, for the demo). Only `*.icloud.com` names and `imap.mail.me.com`,
 * only loopback addresses. The guard and the pin still check every name, and TLS is still verified for it.
 */
export const ICloudResolveSchema = z
  .string()
  .optional()
  .transform((text) => (text ?? '').split(',').filter((entry) => entry.trim() !== ''))
  .pipe(z.array(EntrySchema))
  .transform((entries) => new Map<string, LocalTarget>(entries));

export type ICloudLocalOverride = {
  resolve: ReadonlyMap<string, LocalTarget>;
  /** A PEM file of CAs trusted besides the system's; read at each connection, so it may be replaced. */
  extraCaFile?: string | undefined;
  /** A demo sign-in's own CA (PEM), trusted besides the system's for that sign-in alone (issue 42). */
  extraCaPem?: string | undefined;
};

function trusted(override: ICloudLocalOverride): string[] {
  return [...rootCertificates, ...(override.extraCaFile !== undefined ? [readFileSync(override.extraCaFile, 'utf8')] : []), ...(override.extraCaPem !== undefined ? [override.extraCaPem] : [])];
}

const extraCa = (override: ICloudLocalOverride) => override.extraCaFile !== undefined || override.extraCaPem !== undefined;

async function bodyBytes(body: RequestInit['body']): Promise<Buffer | undefined> {
  if (body === null || body === undefined) return undefined;
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (body instanceof Uint8Array) return Buffer.from(body);
  return Buffer.from(await new Response(body).arrayBuffer());
}

/**
 * The transport of already-guarded iCloud requests under the two settings: an https request to the local
 * address `ICLOUD_RESOLVE` names (or, with only an extra CA file, to the name itself) that sends SNI and
 * `Host` for the real name and verifies the certificate for it against the system's CAs and the extra CA
 * file. With neither setting for a name, it goes out through the global fetch.
 */
export function createOverrideTransport(override: ICloudLocalOverride): typeof fetch {
  return async function overrideTransport(input: string | URL | Request, init?: RequestInit): Promise<Response> {
    const url = new URL(input instanceof Request ? input.url : input);
    const name = url.hostname.toLowerCase().replace(/\.$/, '');
    const target = override.resolve.get(name) ?? (extraCa(override) ? { address: name, port: Number(url.port || 443) } : undefined);
    if (target === undefined) return fetch(input, init);
    const headers = Object.fromEntries(new Headers(init?.headers));
    const body = await bodyBytes(init?.body);
    return new Promise<Response>((resolve, reject) => {
      const outgoing = request(
        {
          host: target.address,
          port: target.port,
          servername: url.hostname,
          ca: trusted(override),
          rejectUnauthorized: true,
          agent: false,
          method: init?.method ?? 'GET',
          path: `${url.pathname}${url.search}`,
          headers: { ...headers, host: url.host, ...(body ? { 'content-length': String(body.length) } : {}) },
          signal: init?.signal ?? undefined,
        },
        (incoming) => {
          const chunks: Buffer[] = [];
          incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
          incoming.on('error', reject);
          incoming.on('end', () => {
            const status = incoming.statusCode ?? 502;
            const answerHeaders = new Headers();
            for (const [name, value] of Object.entries(incoming.headers)) {
              if (value !== undefined) answerHeaders.set(name, Array.isArray(value) ? value.join(', ') : value);
            }
            const empty = status === 204 || status === 304 || init?.method === 'HEAD';
            resolve(new Response(empty ? null : Buffer.concat(chunks), { status, headers: answerHeaders }));
          });
        },
      );
      outgoing.on('error', reject);
      outgoing.end(body);
    });
  };
}

/** The IMAP pin's dialer and CAs under the override: the pin still checks the name and verifies TLS for it. */
export function overrideImapOptions(override: ICloudLocalOverride): PinnedImapOptions {
  const target = override.resolve.get(ICLOUD_IMAP_HOST);
  return {
    ...(target ? { dial: () => netConnect({ host: target.address, port: target.port }) } : {}),
    ...(extraCa(override) ? { ca: () => trusted(override) } : {}),
  };
}

/** The iCloud connector's transport and IMAP options from the two settings; none when neither is set. */
export function icloudOptions(config: { ICLOUD_RESOLVE: ReadonlyMap<string, LocalTarget>; ICLOUD_EXTRA_CA_FILE?: string | undefined }): {
  transport?: typeof fetch;
  imap?: PinnedImapOptions;
} {
  if (config.ICLOUD_RESOLVE.size === 0 && config.ICLOUD_EXTRA_CA_FILE === undefined) return {};
  const override: ICloudLocalOverride = { resolve: config.ICLOUD_RESOLVE, extraCaFile: config.ICLOUD_EXTRA_CA_FILE };
  return { transport: createOverrideTransport(override), imap: overrideImapOptions(override) };
}

/**
 * A demo iCloud sign-in's own map and CA (issue 42), in place of the two settings for that sign-in alone:
 * the guard, the IMAP pin and TLS verification stay on. None when the mark names no iCloud server.
 */
export function demoICloudOptions(demoEndpoints: { ICLOUD_RESOLVE?: string | undefined; ICLOUD_CA_PEM?: string | undefined }): { transport?: typeof fetch; imap?: PinnedImapOptions } {
  if (demoEndpoints.ICLOUD_RESOLVE === undefined && demoEndpoints.ICLOUD_CA_PEM === undefined) return {};
  const override: ICloudLocalOverride = { resolve: ICloudResolveSchema.parse(demoEndpoints.ICLOUD_RESOLVE), extraCaPem: demoEndpoints.ICLOUD_CA_PEM };
  return { transport: createOverrideTransport(override), imap: overrideImapOptions(override) };
}
