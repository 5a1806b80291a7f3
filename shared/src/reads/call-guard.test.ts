import { describe, expect, it } from 'vitest';
import type { AuditEvent, AuditRecorder } from '../audit/index.ts';
import type { Grant } from '../grants/index.ts';
import { createCapturingLogger } from '@pcg/testkit/testing';
import { createCallGuard, grantedSectors, type Outcome } from './call-guard.ts';
import { AccessDeniedError, NotFoundError, recordNotFound, unknownSector, UpstreamError, ValidationError } from './reads-errors.ts';
import type { Caller } from './reads-types.ts';

const NOW = new Date('2026-11-22T12:00:00.000Z');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const agent = (sectors: Grant['sectors'], expiresAt: string | null = null): Caller => ({
  kind: 'agent',
  grant: { agentId: 3, agentName: 'claude', sectors, expiresAt, generation: 0 },
  requestId: 'req-7',
});
const operator: Caller = { kind: 'operator', requestId: 'op-1' };

/** A guard whose audit rows and error log lines the test reads; its clock stands at NOW unless `now` is left out. */
function harness(options: { clock?: boolean } = {}) {
  const events: AuditEvent[] = [];
  const recorder = { record: (event: AuditEvent) => void events.push(event) } satisfies AuditRecorder;
  const { log, lines } = createCapturingLogger('reads');
  const guard = createCallGuard({ audit: recorder, log, ...(options.clock === false ? {} : { now: () => NOW }) });
  return { events, lines, guard };
}

/** An audit row as the guard hands it to the recorder: every column of spec 2.3 it fills. */
const row = (event: Required<Omit<AuditEvent, 'requestId'>> & { requestId: string }): AuditEvent => event;
const ok = (result: unknown, count: number, outcome?: Outcome['outcome']) => async (): Promise<Outcome> => ({ result, count, ...(outcome ? { outcome } : {}) });
const failing = (error: unknown) => async (): Promise<Outcome> => {
  throw error;
};
const caught = async (promise: Promise<unknown>): Promise<unknown> => promise.then(() => undefined, (error: unknown) => error);
function thrownBy(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('the sector check (spec 5 rule 3)', () => {
  it('answers the sector of a granted target by its first word, the bare sector included', () => {
    const { guard } = harness();
    expect(guard.checkSector(agent(['finance', 'home']), 'finance.transaction')).toBe('finance');
    expect(guard.checkSector(agent(['finance', 'home']), 'home')).toBe('home');
    expect(guard.checkSector(agent(['home']), 'home.light.turn_on', 'action')).toBe('home');
  });

  it('gives the operator every sector', () => {
    const { guard } = harness();
    expect(grantedSectors(operator)).toEqual(['finance', 'health', 'mail', 'contacts', 'calendar', 'home']);
    expect(guard.checkSector(operator, 'calendar.event')).toBe('calendar');
  });

  it('refuses a sector that is not granted, naming it and the granted ones', () => {
    const { guard } = harness();
    const error = thrownBy(() => guard.checkSector(agent(['finance']), 'mail.message'));
    expect(error).toBeInstanceOf(AccessDeniedError);
    expect(error).toMatchObject({ denyReason: 'sector not granted', sector: 'mail', message: "access denied: sector 'mail' is not granted to this agent (granted: finance)" });
    expect(thrownBy(() => guard.checkSector(agent([]), 'finance.account'))).toMatchObject({
      denyReason: 'sector not granted',
      message: "access denied: sector 'finance' is not granted to this agent (granted: none)",
    });
  });

  it.each([
    ['a word that is no sector', 'bank.account', 'bank'],
    ['a sector name in another case', 'Finance.account', 'Finance'],
    ['a sector name glued to more', 'financeaccount', 'financeaccount'],
    ['an empty name', '', ''],
  ])('refuses %s as unknown sector, never mapping it onto a granted one', (_label, name, word) => {
    const { guard } = harness();
    const error = thrownBy(() => guard.checkSector(agent(['finance']), name));
    expect(error).toBeInstanceOf(AccessDeniedError);
    expect(error).toMatchObject({ denyReason: 'unknown sector', sector: null });
    expect((error as Error).message.startsWith(`access denied: '${word}' is not a sector; the sectors are finance, health, mail, contacts, calendar, home`)).toBe(true);
  });

  it('points an unknown read at the granted objects, and an unknown action at the form of action names', () => {
    const { guard } = harness();
    const messageOf = (run: () => unknown) => (thrownBy(run) as Error | undefined)?.message;
    expect(messageOf(() => guard.checkSector(agent(['finance']), 'bank.transaction'))).toContain('; the objects you may read: finance.account');
    expect(messageOf(() => guard.checkSector(agent(['home']), 'light.turn_on', 'action'))).toContain(
      "; action names start with their sector (<sector>.<domain>.<service>) and list_actions names them; did you mean 'home.light.turn_on'?",
    );
  });
});

describe('an agent call: checks, then exactly one audit row (spec 6)', () => {
  it('runs an allowed call and records allow, ok, its sector, count, args and request id', async () => {
    const { guard, events } = harness();
    const result = await guard.audited(agent(['finance']), 'query', { object: 'finance.account' }, () => 'finance', ok({ rows: [1, 2, 3] }, 3));
    expect(result).toEqual({ rows: [1, 2, 3] });
    expect(events).toEqual([
      row({ agentId: 'claude', tool: 'query', sector: 'finance', decision: 'allow', denyReason: null, args: { object: 'finance.account' }, resultCount: 3, outcome: 'ok', requestId: 'req-7' }),
    ]);
  });

  it('hands the run the sector the call touches, or null when it touches none', async () => {
    const { guard, events } = harness();
    const seen: (string | null)[] = [];
    const run = async (sector: string | null): Promise<Outcome> => ((seen.push(sector), { result: null, count: 0 }));
    await guard.audited(agent(['home']), 'list_actions', {}, () => 'home', run);
    await guard.audited(agent(['home']), 'describe_context', {}, () => null, run);
    expect(seen).toEqual(['home', null]);
    expect(events.map((event) => event.sector)).toEqual(['home', null]);
  });

  it('records an ordinary result that still failed as allow with outcome error (a source answering ok: false)', async () => {
    const { guard, events } = harness();
    expect(await guard.audited(agent(['home']), 'invoke_action', {}, () => 'home', ok({ ok: false }, 0, 'error'))).toEqual({ ok: false });
    expect(events).toEqual([expect.objectContaining({ decision: 'allow', outcome: 'error', sector: 'home', denyReason: null, resultCount: 0 })]);
  });

  it('gives a call without a request id a fresh one for its row', async () => {
    const { guard, events } = harness();
    const caller: Caller = { kind: 'agent', grant: { agentId: 3, agentName: 'claude', sectors: ['finance'], expiresAt: null, generation: 0 } };
    await guard.audited(caller, 'query', {}, () => 'finance', ok([], 0));
    await guard.audited(caller, 'query', {}, () => 'finance', ok([], 0));
    const [first, second] = events.map((event) => event.requestId);
    expect(first).toMatch(UUID);
    expect(second).toMatch(UUID);
    expect(first).not.toBe(second);
  });

  it('refuses an ungranted sector before the run, recording deny with the reason and the sector', async () => {
    const { guard, events } = harness();
    const caller = agent(['finance']);
    let ran = false;
    const error = await caught(
      guard.audited(caller, 'query', { object: 'mail.message' }, () => guard.checkSector(caller, 'mail.message'), async () => ((ran = true), { result: null, count: 0 })),
    );
    expect(error).toBeInstanceOf(AccessDeniedError);
    expect(ran).toBe(false);
    expect(events).toEqual([
      row({ agentId: 'claude', tool: 'query', sector: 'mail', decision: 'deny', denyReason: 'sector not granted', args: { object: 'mail.message' }, resultCount: 0, outcome: 'error', requestId: 'req-7' }),
    ]);
  });

  it('never puts an unknown first word in the sector column', async () => {
    const { guard, events } = harness();
    const caller = agent(['finance']);
    await caught(guard.audited(caller, 'query', {}, () => guard.checkSector(caller, 'bank.account'), ok(null, 0)));
    expect(events).toEqual([expect.objectContaining({ decision: 'deny', denyReason: 'unknown sector', sector: null })]);
  });

  it('keeps the sector a call touched on a refusal raised inside the run that names none', async () => {
    const { guard, events } = harness();
    await caught(guard.audited(agent(['home']), 'invoke_action', {}, () => 'home', failing(unknownSector('light'))));
    expect(events).toEqual([expect.objectContaining({ decision: 'deny', denyReason: 'unknown sector', sector: 'home', outcome: 'error' })]);
  });
});

describe('the deadline, checked on every call (spec 3.1, spec 5)', () => {
  it('refuses every call from the expiry instant on with access denied: expired, before the sector or the run', async () => {
    const { guard, events } = harness();
    for (const expiresAt of [NOW.toISOString(), new Date(NOW.getTime() - 1).toISOString()]) {
      let touched = false;
      const error = await caught(
        guard.audited(agent(['finance'], expiresAt), 'query', {}, () => ((touched = true), 'finance'), ok(null, 0)),
      );
      expect(error).toBeInstanceOf(AccessDeniedError);
      expect((error as Error).message).toBe('access denied: expired');
      expect(touched).toBe(false);
    }
    expect(events).toEqual([
      expect.objectContaining({ decision: 'deny', denyReason: 'expired', sector: null, outcome: 'error', resultCount: 0 }),
      expect.objectContaining({ decision: 'deny', denyReason: 'expired', sector: null, outcome: 'error', resultCount: 0 }),
    ]);
  });

  it('serves a key until its expiry instant, and one without a deadline always', async () => {
    const { guard, events } = harness();
    expect(await guard.audited(agent(['finance'], new Date(NOW.getTime() + 1).toISOString()), 'query', {}, () => 'finance', ok('served', 1))).toBe('served');
    expect(await guard.audited(agent(['finance'], null), 'query', {}, () => 'finance', ok('served', 1))).toBe('served');
    expect(events.map((event) => event.decision)).toEqual(['allow', 'allow']);
  });

  it('reads the system clock when given none', async () => {
    const { guard } = harness({ clock: false });
    const before = Date.now();
    expect(guard.now().getTime()).toBeGreaterThanOrEqual(before);
    const past = new Date(before - 1000).toISOString();
    expect(await caught(guard.audited(agent(['finance'], past), 'query', {}, () => 'finance', ok(null, 0)))).toMatchObject({ message: 'access denied: expired' });
    const ahead = new Date(before + 3_600_000).toISOString();
    expect(await guard.audited(agent(['finance'], ahead), 'query', {}, () => 'finance', ok('served', 1))).toBe('served');
  });

  it('tells the time by the clock it was given', () => {
    expect(harness().guard.now()).toEqual(NOW);
  });

  it('lets the operator through whatever the clock says', async () => {
    const { guard } = harness();
    expect(await guard.audited(operator, 'query', {}, () => 'finance', ok('served', 1))).toBe('served');
  });
});

describe('a call that failed after it was allowed (spec 2.3: allow, outcome error)', () => {
  it('passes a gateway error on as it is', async () => {
    const { guard, events, lines } = harness();
    const notFound = recordNotFound('finance.transaction', 't9', false);
    expect(await caught(guard.audited(agent(['finance']), 'get_record', { id: 't9' }, () => 'finance', failing(notFound)))).toBe(notFound);
    expect(notFound).toBeInstanceOf(NotFoundError);
    expect(events).toEqual([
      row({ agentId: 'claude', tool: 'get_record', sector: 'finance', decision: 'allow', denyReason: null, args: { id: 't9' }, resultCount: 0, outcome: 'error', requestId: 'req-7' }),
    ]);
    expect(lines().filter((line) => line.includes('call failed'))).toEqual([]);
  });

  it('turns a value the database refused into a validation error naming the tool', async () => {
    const { guard, events } = harness();
    const refused = Object.assign(new Error('invalid input syntax for type numeric: "abc"'), { code: '22P02' });
    const error = await caught(guard.audited(agent(['finance']), 'query', {}, () => 'finance', failing(refused)));
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toBe('query: the database cannot use a value given here; check it against get_schema');
    expect(events).toEqual([expect.objectContaining({ decision: 'allow', outcome: 'error', sector: 'finance' })]);
  });

  it('hides any other failure behind a retryable upstream error, and logs it with the tool', async () => {
    const { guard, events, lines } = harness();
    const error = await caught(guard.audited(agent(['home']), 'fetch_live', {}, () => 'home', failing(new Error('socket hang up'))));
    expect(error).toBeInstanceOf(UpstreamError);
    expect((error as Error).message).toBe('fetch_live failed; try again later');
    expect(events).toEqual([expect.objectContaining({ decision: 'allow', outcome: 'error', sector: 'home', denyReason: null })]);
    const logged = lines().map((line) => JSON.parse(line) as { level: number; msg: string; tool?: string; err?: { message?: string } });
    expect(logged).toEqual([expect.objectContaining({ level: 50, msg: 'call failed', tool: 'fetch_live', err: expect.objectContaining({ message: 'socket hang up' }) })]);
  });
});

describe('the operator', () => {
  it('leaves no row by default', async () => {
    const { guard, events } = harness();
    await guard.audited(operator, 'query', {}, () => 'mail', ok([], 0));
    await caught(guard.audited(operator, 'query', {}, () => 'mail', failing(new Error('down'))));
    expect(events).toEqual([]);
  });

  it('leaves a row as operator where the act is audited (spec 6: Console acts)', async () => {
    const { guard, events } = harness();
    await guard.audited(operator, 'fetch_live', { object: 'home.entity' }, () => 'home', ok([], 2), { auditOperator: true });
    expect(events).toEqual([
      row({ agentId: 'operator', tool: 'fetch_live', sector: 'home', decision: 'allow', denyReason: null, args: { object: 'home.entity' }, resultCount: 2, outcome: 'ok', requestId: 'op-1' }),
    ]);
  });
});
