import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFuzzStack, type FuzzStack } from './fuzz-stack.ts';
import { fuzzPlan } from './fuzz-settings.ts';
import { describeExchange, generalProblems, unreadHead } from './oracle.ts';
import { adminSurface, auditSurface, mirrorSurface } from './surfaces/console-surfaces.ts';
import { bridgeSurface, hostSurface } from './surfaces/bridge-surface.ts';
import { ingestSurface } from './surfaces/ingest-surface.ts';
import { mcpSurface } from './surfaces/mcp-surface.ts';
import type { Surface } from './surfaces/surface.ts';

// The admin surface goes last: it may switch the bridge off or save another origin.
const SURFACES: Surface[] = [mcpSurface, mirrorSurface, auditSurface, ingestSurface, bridgeSurface, hostSurface, adminSurface()];
const plan = fuzzPlan(process.env, SURFACES.length);
const counts = new Map<string, number>();
let stack: FuzzStack;

beforeAll(async () => {
  stack = await startFuzzStack();
}, 120_000);

afterAll(async () => {
  const summary = SURFACES.map((surface) => `${surface.name} ${counts.get(surface.name) ?? 0}`).join(', ');
  process.stdout.write(`[fuzz] seeds ${plan.seeds.join(', ')}; cases per surface: ${summary}\n`);
  await stack?.stack.stop();
});

const perSurfaceTimeout = (plan.secondsPerSurface ?? 60) * 1000 * plan.seeds.length + 120_000;

describe('hostile requests against the four real processes', () => {
  for (const surface of SURFACES) {
    it(`${surface.name}: no 5xx, no internal text, no secret echoed, and the specification's fixed answers`, async () => {
      for (const seed of plan.seeds) {
        const property = fc.asyncProperty(surface.requests(stack), async (request) => {
          counts.set(surface.name, (counts.get(surface.name) ?? 0) + 1);
          let answer;
          try {
            answer = await stack.send(request);
          } catch (error) {
            throw new Error(`no answer: ${describeExchange(request, error as Error)}`, { cause: error });
          }
          await surface.after?.(stack, request, answer);
          const fixed = unreadHead(request, answer) ? [] : (surface.check?.(stack, request, answer) ?? []);
          const problems = [...generalProblems(request, answer, stack.secrets), ...fixed];
          if (problems.length > 0) throw new Error(`${problems.join('; ')}\n${describeExchange(request, answer)}`);
        });
        await fc.assert(property, {
          seed,
          numRuns: plan.runsPerSeed,
          interruptAfterTimeLimit: plan.secondsPerSurface === undefined ? undefined : plan.secondsPerSurface * 1000,
          markInterruptAsFailure: false,
          endOnFailure: plan.secondsPerSurface === undefined,
        });
      }
    }, perSurfaceTimeout);
  }

  it('leaves every process up with no restart, serving, and no secret in any log line', async () => {
    const output = stack.stack.output();
    expect(output).not.toMatch(/exited \(.*\); restarting/);
    expect((await stack.send({ port: 'console', method: 'GET', path: '/healthz', headers: {} })).status).toBe(200);
    const context = await stack.send({ port: 'console', method: 'GET', path: '/api/context', headers: { authorization: `Bearer ${stack.agentKey}` } });
    expect(context.status).toBe(200);
    for (const secret of stack.secrets) expect(output.includes(secret)).toBe(false);
  });
});
