import { ConnectionCheckSchema } from '@pcg/shared/connections';
import type { CommandInput } from './agents-commands.ts';
import { CommandFailed, UsageError } from './cli-errors.ts';
import { printJson } from './output.ts';

/**
 * `pcg connections check <id>` (issue 32): asks the Console to run the connection's check and prints
 * each step, passed or failed, in plain words with its fix. Exit 1 when any step failed.
 */
export async function connectionsCheck(input: CommandInput): Promise<void> {
  const [id, ...rest] = input.args;
  if (!id || rest.length > 0) throw new UsageError('connections check takes one connection id (see pcg connections list)');
  const answer = await input.console.ok('POST', `/api/connections/${encodeURIComponent(id)}/check`);
  const check = ConnectionCheckSchema.parse(answer.body);
  if (input.io.json) printJson(input.io, check);
  else {
    const lines = check.steps.map((step) => `${step.passed ? 'passed' : 'FAILED'}  ${step.title}: ${step.message}`);
    input.io.out.write(`${[...lines, `${check.ok ? 'all steps passed' : 'some steps failed'} (${check.requests} request${check.requests === 1 ? '' : 's'} to the source)`].join('\n')}\n`);
  }
  if (!check.ok) throw new CommandFailed(`the check of connection ${id} found ${check.steps.filter((step) => !step.passed).length} failing step(s)`);
}
