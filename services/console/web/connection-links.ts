import { h, isolated } from './dom.ts';

/** The address of a connection's card on the Connections screen: it opens scrolled to the card. */
export const cardHref = (connectionId: string) => `#connections?card=${encodeURIComponent(connectionId)}`;

export function cardLink(connectionId: string, text: string): HTMLAnchorElement {
  return h('a', { href: cardHref(connectionId), 'data-card-link': connectionId }, isolated(text));
}
