import { parseArgs } from 'node:util';
import { agentsCommands, type CommandInput } from './agents-commands.ts';
import { CommandFailed, EXIT, UsageError } from './cli-errors.ts';
import { consoleUrl, createConsoleClient } from './console-client.ts';
import { helpFor } from './command-help.ts';
import { auditTail, auditVerify, connectionsCommands, status } from './other-commands.ts';
import { connectionsCheck } from './connections-check-command.ts';
import type { Io } from './output.ts';

export const USAGE = `usage: pcg <command> [options]

  agents list
  agents create <name> --sectors a,b [--expires-in-days N|never]   prints the key once
  agents edit <name> [--sectors a,b] [--expires-in-days N|never]
  agents rotate <name>                                             prints the new key once
  agents revoke <name>
  agents delete <name>
  audit tail [--agent A] [--tool T] [--decision allow|deny] [--sector S] [--since ISO] [--before CURSOR] [--limit N]
  audit verify     walks the audit record's hash chain; exit 1 when it is broken (see pcg audit verify --help)
  status           is everything all right: a short summary (--json: the Console's whole answer)
  connections list
  connections sync|pause|resume <id>
  connections check <id>   runs the connection's checks against its source; exit 1 when a step failed
  mcp        the operator's stdio MCP session, with every sector (for your own local MCP client)

options:
  --json            machine-readable output on stdout
  --console <url>   the Console to talk to (default PCG_CONSOLE_URL, else http://127.0.0.1:$REST_PORT, 8787)
  --help

exit status: 0 done, 1 refused or failed (or no Console answers), 2 usage error`;

type Handler = (input: CommandInput) => Promise<void>;

const GROUPS: Record<string, Record<string, Handler> | Handler> = {
  agents: agentsCommands,
  audit: { tail: auditTail, verify: auditVerify },
  connections: { ...connectionsCommands, check: connectionsCheck },
  status,
};

function resolveHandler(positionals: string[]): { handler: Handler; args: string[] } {
  const [group = '', verb = '', ...rest] = positionals;
  const entry = GROUPS[group];
  if (!entry) throw new UsageError(group ? `unknown command '${group}'` : 'no command given');
  if (typeof entry === 'function') return { handler: entry, args: positionals.slice(1) };
  const handler = entry[verb];
  if (!handler) throw new UsageError(`'${group}' takes one of: ${Object.keys(entry).join(', ')}`);
  return { handler, args: rest };
}

/** Runs one command line; returns the exit status. */
export async function runCli(argv: string[], env: NodeJS.ProcessEnv, io: Omit<Io, 'json'>): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    io.err.write(`pcg: ${(error as Error).message}\n${USAGE}\n`);
    return EXIT.usage;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.out.write(`${helpFor(positionals) ?? USAGE}\n`);
    return EXIT.ok;
  }
  try {
    if (positionals[0] === 'mcp') {
      if (positionals.length > 1 || values.json) throw new UsageError('mcp takes no arguments or options');
      // Loaded only here: it brings the gateway's tools and the local stores, which the other commands never need.
      const { runMcpSession } = await import('./mcp-command.ts');
      await runMcpSession(env);
      return EXIT.ok;
    }
    const { handler, args } = resolveHandler(positionals);
    const console = createConsoleClient(consoleUrl(env, values.console));
    await handler({ args, options: values, io: { ...io, json: values.json ?? false }, console });
    return EXIT.ok;
  } catch (error) {
    if (error instanceof UsageError) {
      io.err.write(`pcg: ${error.message}\n${USAGE}\n`);
      return EXIT.usage;
    }
    if (error instanceof CommandFailed) {
      io.err.write(`pcg: ${error.message}\n`);
      return EXIT.failed;
    }
    throw error;
  }
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
      console: { type: 'string' },
      sectors: { type: 'string' },
      'expires-in-days': { type: 'string' },
      agent: { type: 'string' },
      tool: { type: 'string' },
      decision: { type: 'string' },
      sector: { type: 'string' },
      since: { type: 'string' },
      before: { type: 'string' },
      limit: { type: 'string' },
    },
  });
}
