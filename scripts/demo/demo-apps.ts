import { z } from 'zod';
import type { DemoLedger } from './demo-ledger.ts';

const ProvidersSchema = z.object({
  providers: z.array(z.object({ kind: z.string(), oauth: z.object({ appSaved: z.boolean() }).nullable(), link: z.object({ appSaved: z.boolean() }).nullable() })),
});

export type DemoApps = {
  /**
   * Makes the stand-in's application (`body`: what `PUT /api/connect/<provider>/app` takes) the one saved for
   * `provider`, or keeps it when the demo saved it before. Answers why the demo must leave the provider alone
   * when an application the demo did not save is there.
   */
  use(provider: string, body: Record<string, string>): Promise<{ refused: string } | { ok: true }>;
  /** The Console's sign-in went out with another client id than the stand-in's: the saved application is no longer the demo's. */
  notOurs(provider: string): string;
};

/**
 * A provider has one saved application, and every connection of it renews its sign-in with that client id and
 * secret (the sync-worker reads it at each refresh). Saving a stand-in's over an operator's own would break
 * the operator's real connections of that provider, so the demo saves one only where none is saved, and uses
 * again only the ones its ledger says it saved. An operator's application saved after the demo's is told apart
 * by the sign-in's client id (`notOurs`).
 */
export async function demoApps(consoleBase: string, ledger: DemoLedger): Promise<DemoApps> {
  const answer = await fetch(`${consoleBase}/api/providers`);
  const { providers } = ProvidersSchema.parse(await answer.json());
  const saved = new Set(providers.filter((provider) => provider.oauth?.appSaved || provider.link?.appSaved).map((provider) => provider.kind));
  const leaveAlone = (provider: string) =>
    `an application of your own is saved for ${provider} in the Console, and the demo does not replace it (its connections renew their sign-ins with it); use a fresh DATA_DIR to see this provider's demo`;
  return {
    async use(provider, body) {
      if (saved.has(provider)) return ledger.apps().includes(provider) ? { ok: true } : { refused: leaveAlone(provider) };
      const put = await fetch(`${consoleBase}/api/connect/${provider}/app`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      if (put.status !== 204) return { refused: `the Console did not save the stand-in's application (HTTP ${put.status})` };
      saved.add(provider);
      ledger.ownApp(provider, true);
      return { ok: true };
    },
    notOurs(provider) {
      ledger.ownApp(provider, false);
      return leaveAlone(provider);
    },
  };
}
