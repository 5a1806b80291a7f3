import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

// `apps` came later: a list written before it has none, so the demo owns no saved application.
const LedgerSchema = z.object({ connections: z.array(z.string()), apps: z.array(z.string()).default([]) });
type Ledger = z.infer<typeof LedgerSchema>;

/**
 * What the demo made, kept in `DATA_DIR/demo-made.json`: the id of every connection it created or signed in,
 * so Ctrl-C pauses exactly those, a second run resumes them, and `--remove` deletes them and nothing else
 * (an operator's connection is never in it, whatever its name); and the providers whose saved application
 * (client id and secret) is the demo's stand-in's, so it never replaces an operator's own (`demo-apps.ts`).
 */
export function demoLedger(dataDir: string) {
  const file = path.join(dataDir, 'demo-made.json');
  const read = (): Ledger => {
    if (!existsSync(file)) return { connections: [], apps: [] };
    const parsed = LedgerSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    return parsed.success ? parsed.data : { connections: [], apps: [] };
  };
  const write = (ledger: Ledger) => {
    mkdirSync(dataDir, { recursive: true });
    const whole = { connections: [...new Set(ledger.connections)], apps: [...new Set(ledger.apps)] };
    // Written whole, then renamed: a demo stopped mid-write leaves the previous list, never half of one.
    writeFileSync(`${file}.tmp`, `${JSON.stringify(whole, null, 2)}\n`);
    renameSync(`${file}.tmp`, file);
  };
  return {
    file,
    connections: () => read().connections,
    /** Adds what the demo just made. */
    add(ids: readonly string[]): void {
      const ledger = read();
      if (ids.length > 0) write({ ...ledger, connections: [...ledger.connections, ...ids] });
    },
    /** Forgets connections that are gone (removed here or by the operator). */
    keepOnly(existing: ReadonlySet<string>): void {
      const ledger = read();
      write({ ...ledger, connections: ledger.connections.filter((id) => existing.has(id)) });
    },
    /** Providers whose saved application the demo saved. */
    apps: () => read().apps,
    /** Notes that the demo saved `provider`'s application, or (`owned` false) that it is no longer the demo's. */
    ownApp(provider: string, owned: boolean): void {
      const ledger = read();
      write({ ...ledger, apps: owned ? [...ledger.apps, provider] : ledger.apps.filter((kind) => kind !== provider) });
    },
  };
}

export type DemoLedger = ReturnType<typeof demoLedger>;
