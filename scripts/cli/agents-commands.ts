import { UsageError } from './cli-errors.ts';
import type { ConsoleClient } from './console-client.ts';
import { printRecord, printTable, type Io } from './output.ts';

export type CommandInput = { args: string[]; options: Record<string, string | boolean | undefined>; io: Io; console: ConsoleClient };

const AGENT_COLUMNS = ['name', 'status', 'sectors', 'expiresAt', 'createdAt'] as const;

function nameOf(input: CommandInput, verb: string): string {
  const [name, ...rest] = input.args;
  if (!name || rest.length > 0) throw new UsageError(`agents ${verb} takes one agent name`);
  return encodeURIComponent(name);
}

function sectorsOption(value: string | boolean | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new UsageError('--sectors takes a comma-separated list, e.g. --sectors home,health (or "" for none)');
  return value.split(',').map((sector) => sector.trim()).filter((sector) => sector.length > 0);
}

/** `--expires-in-days 30`, or `never` (no deadline); absent leaves it as it is. */
function expiryOption(value: string | boolean | undefined): number | null | undefined {
  if (value === undefined) return undefined;
  if (value === 'never') return null;
  if (typeof value !== 'string' || !/^\d+$/.test(value)) throw new UsageError('--expires-in-days takes a whole number of days, or "never"');
  return Number(value);
}

/** The key is shown once, here, and never again: say so where a person reads it. */
function printIssued(input: CommandInput, issued: Record<string, unknown>): void {
  if (input.io.json) return printRecord(input.io, issued);
  printRecord(input.io, issued);
  input.io.err.write('Store the key now: it is shown this once and cannot be read again (rotate to get a new one).\n');
}

export const agentsCommands: Record<string, (input: CommandInput) => Promise<void>> = {
  async list(input) {
    if (input.args.length > 0) throw new UsageError('agents list takes no arguments');
    const { body } = await input.console.ok('GET', '/api/agents');
    printTable(input.io, body as Array<Record<string, unknown>>, AGENT_COLUMNS);
  },
  async create(input) {
    const [name, ...rest] = input.args;
    if (!name || rest.length > 0) throw new UsageError('agents create takes one agent name');
    const sectors = sectorsOption(input.options.sectors);
    if (sectors === undefined) throw new UsageError('agents create needs --sectors (e.g. --sectors home,health; "" grants none)');
    const expiresInDays = expiryOption(input.options['expires-in-days']);
    const body = { name, sectors, ...(expiresInDays === undefined ? {} : { expiresInDays }) };
    const { status, body: issued } = await input.console.ok('POST', '/api/agents', body);
    if (status === 200 && !input.io.json) input.io.err.write(`An agent named ${name} existed: this was a rotation, its old key no longer works.\n`);
    printIssued(input, issued as Record<string, unknown>);
  },
  async edit(input) {
    const name = nameOf(input, 'edit');
    const sectors = sectorsOption(input.options.sectors);
    const expiresInDays = expiryOption(input.options['expires-in-days']);
    if (sectors === undefined && expiresInDays === undefined) throw new UsageError('agents edit needs --sectors and/or --expires-in-days');
    const { body } = await input.console.ok('PATCH', `/api/agents/${name}`, {
      ...(sectors === undefined ? {} : { sectors }),
      ...(expiresInDays === undefined ? {} : { expiresInDays }),
    });
    printRecord(input.io, body as Record<string, unknown>);
  },
  async rotate(input) {
    const { body } = await input.console.ok('POST', `/api/agents/${nameOf(input, 'rotate')}/rotate`);
    printIssued(input, body as Record<string, unknown>);
  },
  async revoke(input) {
    const { body } = await input.console.ok('POST', `/api/agents/${nameOf(input, 'revoke')}/revoke`);
    printRecord(input.io, body as Record<string, unknown>);
  },
  async delete(input) {
    const name = nameOf(input, 'delete');
    await input.console.ok('DELETE', `/api/agents/${name}`);
    if (input.io.json) printRecord(input.io, { deleted: decodeURIComponent(name) });
    else input.io.out.write(`deleted ${decodeURIComponent(name)}\n`);
  },
};
