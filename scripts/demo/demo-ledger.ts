import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

const LedgerSchema = z.object({ connections: z.array(z.string()) });

/**
 * What the demo made, kept in `DATA_DIR/demo-made.json`: the id of every connection it created or signed in,
 * so Ctrl-C pauses exactly those, a second run resumes them, and `--remove` deletes them and nothing else
 * (an operator's connection is never in it, whatever its name).
 */
export function demoLedger(dataDir: string) {
  const file = path.join(dataDir, 'demo-made.json');
  const read = (): string[] => {
    if (!existsSync(file)) return [];
    const parsed = LedgerSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    return parsed.success ? parsed.data.connections : [];
  };
  const write = (connections: readonly string[]) => {
    mkdirSync(dataDir, { recursive: true });
    // Written whole, then renamed: a demo stopped mid-write leaves the previous list, never half of one.
    writeFileSync(`${file}.tmp`, `${JSON.stringify({ connections: [...new Set(connections)] }, null, 2)}\n`);
    renameSync(`${file}.tmp`, file);
  };
  return {
    file,
    connections: read,
    /** Adds what the demo just made. */
    add(ids: readonly string[]): void {
      if (ids.length > 0) write([...read(), ...ids]);
    },
    /** Forgets connections that are gone (removed here or by the operator). */
    keepOnly(existing: ReadonlySet<string>): void {
      write(read().filter((id) => existing.has(id)));
    },
  };
}

export type DemoLedger = ReturnType<typeof demoLedger>;
