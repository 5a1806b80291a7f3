import { DomainError } from '@pcg/shared/errors';
import { isLoopbackHost } from '@pcg/shared/providers';

/** Why a demo sign-in was refused to a peer that is not this machine. */
export const DEMO_NOT_LOCAL = 'a demo sign-in is started from this machine only';

/**
 * A demo's sign-in (issue 42) is asked for from this machine only: judged by the socket's peer address
 * (an IPv4-mapped IPv6 address is read as its IPv4), never by a header a client could write.
 */
export function refuseUnlessLocalPeer(remoteAddress: string | undefined): void {
  const peer = (remoteAddress ?? '').replace(/^::ffff:/i, '');
  if (!isLoopbackHost(peer)) throw new DomainError('forbidden', 'demo_not_local', DEMO_NOT_LOCAL);
}
