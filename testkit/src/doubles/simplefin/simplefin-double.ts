import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local SimpleFIN bridge for tests and the demo (reference/providers.md §2): base64 setup tokens that
 * decode to a claim URL, a single-use claim (403 the second time) answering an access URL with random
 * `user:pass`, and `GET /accounts` behind HTTP Basic with `start-date` (inclusive), `end-date`
 * (exclusive), `pending`, repeatable `account` and `balances-only`; numeric strings, epoch seconds,
 * 402 and 403. Without `version=2` it answers the v1 Account Set (`errors`, an `org` per account); with
 * it, the v2 one (protocol-v2.md "Account Set", "Connection": `errlist`, `connections`, a `conn_id` per
 * account and no `org`), the two never mixed, as the live Bridge does. Banks and their accounts come and
 * go as the test says; `/accounts` can be made to redirect.
 *
 * Sources, cited at each behaviour: [SF-PROTO] simplefin/simplefin.github.com @0d1524c `protocol.md` (its
 * sections "POST /claim/:token", "GET /accounts", "Account Set", "Transaction"); [SF-V2] the same repository's
 * `protocol-v2.md`; providers.md §2.x; third-party reports of the live Bridge where the protocol is silent, each
 * named. A behaviour none of them settles is marked `guess:`.
 */

export type BridgeTransaction = { id: string; posted: number; amount: string; description: string; transacted_at?: number; pending?: boolean; payee?: string };
export type BridgeHolding = { id: string; description: string; symbol?: string; shares: number; market_value: string; cost_basis?: string; currency?: string };
export type BridgeAccount = {
  org: { domain?: string; name?: string; 'sfin-url': string };
  /** The bridge connection (one login at one bank); by default one per institution. Two logins at one bank may list the same account id. */
  conn_id?: string;
  id: string;
  name: string;
  currency: string;
  balance: string;
  'available-balance'?: string;
  'balance-date': number;
  transactions: BridgeTransaction[];
  holdings?: BridgeHolding[];
};

export type BridgeRequest = { method: string; path: string; query: URLSearchParams; at: number; basicUser: string | null; authorization: string | null };

const nowS = () => Math.floor(Date.now() / 1000);
const DAY_S = 86_400;

/** Two banks, three accounts and a few weeks of transactions, amounts positive when money enters (the bridge's sign). */
export function demoBridgeAccounts(now = nowS()): BridgeAccount[] {
  const day = (ago: number) => now - ago * DAY_S;
  return [
    {
      org: { domain: 'chase.com', name: 'Chase', 'sfin-url': 'https://bridge.example/simplefin' },
      id: 'ACT-chase-chk',
      name: 'Total Checking ••4821',
      currency: 'USD',
      balance: '4812.33',
      'available-balance': '4712.33',
      'balance-date': day(0),
      transactions: [
        { id: 'TRN-1', posted: day(3), amount: '-54.20', description: 'WHOLE FOODS #123', transacted_at: day(4), payee: 'Whole Foods' },
        { id: 'TRN-2', posted: day(2), amount: '3850.00', description: 'ACME CORP PAYROLL', payee: 'Acme Corp' },
        { id: 'TRN-3', posted: 0, amount: '-12.75', description: 'BLUE BOTTLE COFFEE', transacted_at: day(0), pending: true },
      ],
    },
    {
      org: { domain: 'ally.com', name: 'Ally Bank', 'sfin-url': 'https://bridge.example/simplefin' },
      id: 'ACT-ally-sav',
      name: 'Online Savings',
      currency: 'USD',
      balance: '18250.00',
      'balance-date': day(0),
      transactions: [{ id: 'TRN-9', posted: day(5), amount: '25.31', description: 'INTEREST PAID' }],
    },
  ];
}

export type SimplefinDoubleOptions = { accounts?: BridgeAccount[]; port?: number };

/** Where the double keeps an account: by its id, or by connection and id when the test gave its connection. */
const storeKey = (account: Pick<BridgeAccount, 'conn_id' | 'id'>) => (account.conn_id ? `${account.conn_id}/${account.id}` : account.id);
const institutionOf = (account: BridgeAccount) => account.org.domain ?? account.org.name ?? 'bank';
const connectionOf = (account: BridgeAccount) => account.conn_id ?? `CON-${institutionOf(account)}`;

/**
 * The Bridge's cap on one request's span and its advice, as observed on the live Bridge (third-party
 * reports; the Bridge guide states neither): over 90 days the most recent 90 are answered with a
 * `gen.api` entry "…was capped." (securo-finance/securo#919; firefly-iii/firefly-iii#12128), over 45 a
 * `gen.api` entry "…may be capped." Both ride an HTTP 200.
 */
const CAP_S = 90 * DAY_S;
const ADVISED_S = 45 * DAY_S;
const CAPPED = 'Requested date range exceeds limit of 90 days and was capped.';
const ADVISED = 'Requested date range exceeds recommended range of 45 days. In the future, this may be capped.';

/**
 * The Bridge's daily budget per access URL, as SimpleFIN support put it to a user (quoted in
 * actualbudget/actual#3228): "The suggested use is 24 requests/day, you will get warned at 48 requests/day and
 * then blocked at 96 requests/day"; the Bridge guide copy (providers.md §2.4) says the quota replenishes through
 * the day, so the double counts the last 24 hours. guess: the warning's words and that it rides the errors list as
 * a `gen.api` entry like the range notes; that "blocked" is the protocol's 403 ("access has been revoked").
 */
const WARN_AFTER = 48;
const BLOCK_AFTER = 96;
const BUDGET_WINDOW_MS = 86_400_000;
const BUDGET_WARNING = 'You have made more than 48 requests in the last 24 hours. Access will be blocked above 96.';

export async function startSimplefinDouble(options: SimplefinDoubleOptions = {}) {
  const accounts = new Map((options.accounts ?? demoBridgeAccounts()).map((account) => [storeKey(account), structuredClone(account)]));
  const unclaimed = new Set<string>();
  /** Basic user → password of every access URL handed out and not revoked. */
  const access = new Map<string, string>();
  const requests: BridgeRequest[] = [];
  const state = {
    errors: [] as string[],
    paymentRequired: false,
    claims: 0,
    failNext: [] as Array<{ status: number; retryAfter?: string }>,
    /** Every `/accounts` request is answered with this redirect (the query kept), when set. */
    redirect: null as { location: string; status: number } | null,
  };

  function send(res: ServerResponse, status: number, body: unknown, type = 'application/json'): void {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(text) });
    res.end(text);
  }

  function basic(req: IncomingMessage): { user: string; pass: string } | null {
    const match = /^Basic ([A-Za-z0-9+/=]+)$/.exec(req.headers.authorization ?? '');
    if (!match?.[1]) return null;
    const decoded = Buffer.from(match[1], 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon < 0 ? null : { user: decoded.slice(0, colon), pass: decoded.slice(colon + 1) };
  }

  /** The `/accounts` requests of one access URL within the last 24 hours, this one included. */
  const budget = new Map<string, number[]>();
  function countRequest(user: string): number {
    const now = Date.now();
    const recent = (budget.get(user) ?? []).filter((at) => now - at < BUDGET_WINDOW_MS);
    recent.push(now);
    budget.set(user, recent);
    return recent.length;
  }

  /**
   * [SF-PROTO] "GET /accounts": `start-date` on or after, `end-date` before and not on (epoch seconds), `pending=1`
   * adds pending transactions (off by default), `account` restricts (repeatable), `balances-only=1` sends no
   * transactions; the Account Set's `errors` is required. The 90/45-day notes: see CAPPED above.
   * guess: pending transactions (posted 0) are given whatever the window, as their `posted` says nothing.
   */
  function accountSet(query: URLSearchParams, requestsToday: number) {
    const now = nowS();
    const end = query.has('end-date') ? Number(query.get('end-date')) : undefined;
    let start = query.has('start-date') ? Number(query.get('start-date')) : undefined;
    const notes: string[] = [];
    if (start !== undefined && (end ?? now) - start > CAP_S) {
      start = (end ?? now) - CAP_S;
      notes.push(CAPPED);
    } else if (start !== undefined && (end ?? now) - start > ADVISED_S) notes.push(ADVISED);
    if (requestsToday > WARN_AFTER) notes.push(BUDGET_WARNING);
    const pending = query.get('pending') === '1';
    const only = query.getAll('account');
    const balancesOnly = query.get('balances-only') === '1';
    // providers.md §2.2 [SF-DEV]: `version=2` asks for the v2 Account Set ([SF-V2] "Account Set", "Connection",
    // "Error": `errlist` with codes, `connections`, a `conn_id` per account, no `org`).
    const v2 = query.get('version') === '2';
    const listed = [...accounts.values()].filter((account) => only.length === 0 || only.includes(account.id));
    const shown = listed.map((full) => {
      const { org, conn_id: _connection, ...account } = full;
      return {
      ...(v2 ? { conn_id: connectionOf(full) } : { org }),
      ...account,
      // A request with an end-date is answered as of that date (observed on the live Bridge; the balance itself is kept here).
      ...(end !== undefined && end < account['balance-date'] ? { 'balance-date': end } : {}),
      transactions: balancesOnly
        ? undefined
        : account.transactions.filter((tx) => {
            if (tx.pending) return pending;
            return (start === undefined || tx.posted >= start) && (end === undefined || tx.posted < end);
          }),
      };
    });
    if (!v2) return { errors: [...notes, ...state.errors], accounts: shown };
    const connections = new Map<string, Record<string, string>>();
    for (const account of listed) {
      const institution = institutionOf(account);
      connections.set(connectionOf(account), {
        conn_id: connectionOf(account),
        name: account.org.name ?? institution,
        org_id: `ORG-${institution}`,
        ...(account.org.name ? { org_name: account.org.name } : {}),
        ...(account.org.domain ? { org_url: `https://${account.org.domain}` } : {}),
        sfin_url: account.org['sfin-url'],
      });
    }
    return {
      // protocol-v2.md "Error": `gen.` is a general error and needs no `conn_id` or `account_id`.
      errlist: [...notes.map((msg) => ({ code: 'gen.api', msg })), ...state.errors.map((msg) => ({ code: 'gen.', msg }))],
      connections: [...connections.values()],
      accounts: shown,
    };
  }

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://double');
    const credentials = basic(req);
    requests.push({ method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, at: Date.now(), basicUser: credentials?.user ?? null, authorization: req.headers.authorization ?? null });
    req.resume();
    // [SF-PROTO] "POST /claim/:token": 200 with the Access URL as text, 403 for a token unknown or already claimed
    // (single use, providers.md §2.1). guess: the 403's body, and that a GET of the claim URL is a plain 404.
    const claim = /^\/simplefin\/claim\/([^/]+)$/.exec(url.pathname);
    if (claim?.[1] && req.method === 'POST') {
      const token = decodeURIComponent(claim[1]);
      if (!unclaimed.delete(token)) return send(res, 403, 'Forbidden', 'text/plain');
      state.claims += 1;
      const user = `user${randomBytes(6).toString('hex')}`;
      const pass = randomBytes(12).toString('hex');
      access.set(user, pass);
      return send(res, 200, `${double.url.replace('://', `://${user}:${pass}@`)}/simplefin`, 'text/plain');
    }
    // [SF-PROTO] "GET /info".
    if (url.pathname === '/simplefin/info' && req.method === 'GET') return send(res, 200, { versions: ['1.0'] });
    // A scenario the test turns on: the Bridge guide fetches with `curl -L` (providers.md §2.1 [SF-DEV]), so a
    // client may meet a redirect. guess: that the live Bridge ever redirects `/accounts`.
    if (url.pathname === '/simplefin/accounts' && state.redirect) {
      res.writeHead(state.redirect.status, { location: `${state.redirect.location}${url.search}`, 'content-length': 0 });
      return res.end();
    }
    // A same-origin new home of the access root (where a redirect may send a client).
    if ((url.pathname === '/simplefin/accounts' || url.pathname === '/moved/simplefin/accounts') && req.method === 'GET') {
      // [SF-PROTO] "GET /accounts": HTTP Basic with the claimed credentials; 403 when they fail or were revoked, 402
      // when payment is required. guess: the bodies of both (the protocol gives only the statuses).
      if (!credentials || access.get(credentials.user) !== credentials.pass) return send(res, 403, 'Forbidden', 'text/plain');
      if (state.paymentRequired) return send(res, 402, 'Payment Required', 'text/plain');
      const requestsToday = countRequest(credentials.user);
      if (requestsToday > BLOCK_AFTER) return send(res, 403, 'Forbidden', 'text/plain');
      const fault = state.failNext.shift();
      if (fault) {
        if (fault.retryAfter) res.setHeader('retry-after', fault.retryAfter);
        return send(res, fault.status, 'Unavailable', 'text/plain');
      }
      return send(res, 200, accountSet(url.searchParams, requestsToday));
    }
    send(res, 404, 'Not Found', 'text/plain');
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  const double = {
    url: `http://127.0.0.1:${port}`,
    requests,
    state,
    accounts,
    /** A new single-use setup token: base64 of its claim URL. */
    issueSetupToken(): string {
      const token = randomBytes(16).toString('hex');
      unclaimed.add(token);
      return Buffer.from(`${double.url}/simplefin/claim/${token}`).toString('base64');
    },
    /** `/accounts` requests of each access URL (by its Basic user) within the last 24 hours: the Bridge's daily budget. */
    requestsToday(): Map<string, number> {
      const now = Date.now();
      return new Map([...budget].map(([user, times]) => [user, times.filter((at) => now - at < BUDGET_WINDOW_MS).length]));
    },
    /** Every access URL handed out stops working (403), as when the operator revokes the app at the bridge. */
    revokeAccess(): void {
      access.clear();
    },
    addAccount(account: BridgeAccount): void {
      accounts.set(storeKey(account), structuredClone(account));
    },
    /** A bank unlinked at the bridge: its account is no longer listed (`conn_id/id` for an account added with its connection). */
    removeAccount(id: string): void {
      accounts.delete(id);
    },
    /** Every later `/accounts` request is answered with a redirect to `location` (its query kept); null stops it. */
    redirectAccounts(location: string | null, status = 302): void {
      state.redirect = location === null ? null : { location, status };
    },
    addTransaction(accountId: string, tx: BridgeTransaction): void {
      accounts.get(accountId)?.transactions.push(tx);
    },
    updateTransaction(accountId: string, id: string, change: Partial<BridgeTransaction>): void {
      const tx = accounts.get(accountId)?.transactions.find((candidate) => candidate.id === id);
      if (tx) Object.assign(tx, change);
    },
    removeTransaction(accountId: string, id: string): void {
      const account = accounts.get(accountId);
      if (account) account.transactions = account.transactions.filter((tx) => tx.id !== id);
    },
    /** `errors[]` of every later answer (a bank that failed to answer at the bridge). */
    setErrors(errors: string[]): void {
      state.errors = [...errors];
    },
    /** The next `/accounts` answers fail with these statuses, in order. */
    failNext(status: number, options: { times?: number; retryAfter?: string } = {}): void {
      for (let i = 0; i < (options.times ?? 1); i += 1) state.failNext.push({ status, ...(options.retryAfter ? { retryAfter: options.retryAfter } : {}) });
    },
    accountRequests(): BridgeRequest[] {
      return requests.filter((request) => request.path === '/simplefin/accounts');
    },
    close(): Promise<void> {
      return new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
    },
  };
  return double;
}

export type SimplefinDouble = Awaited<ReturnType<typeof startSimplefinDouble>>;
