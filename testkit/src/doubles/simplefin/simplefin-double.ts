import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local SimpleFIN bridge for tests and the demo (reference/providers.md §2): base64 setup tokens that
 * decode to a claim URL, a single-use claim (403 the second time) answering an access URL with random
 * `user:pass`, and `GET /accounts` behind HTTP Basic with `start-date` (inclusive), `end-date`
 * (exclusive), `pending`, repeatable `account` and `balances-only`; numeric strings, epoch seconds,
 * `errors` (and v2 `errlist` with `version=2`), 402 and 403. Banks and their accounts come and go as the
 * test says.
 */

export type BridgeTransaction = { id: string; posted: number; amount: string; description: string; transacted_at?: number; pending?: boolean; payee?: string };
export type BridgeHolding = { id: string; description: string; symbol?: string; shares: number; market_value: string; cost_basis?: string; currency?: string };
export type BridgeAccount = {
  org: { domain?: string; name?: string; 'sfin-url': string };
  id: string;
  name: string;
  currency: string;
  balance: string;
  'available-balance'?: string;
  'balance-date': number;
  transactions: BridgeTransaction[];
  holdings?: BridgeHolding[];
};

export type BridgeRequest = { method: string; path: string; query: URLSearchParams; at: number; basicUser: string | null };

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

export async function startSimplefinDouble(options: SimplefinDoubleOptions = {}) {
  const accounts = new Map((options.accounts ?? demoBridgeAccounts()).map((account) => [account.id, structuredClone(account)]));
  const unclaimed = new Set<string>();
  /** Basic user → password of every access URL handed out and not revoked. */
  const access = new Map<string, string>();
  const requests: BridgeRequest[] = [];
  const state = { errors: [] as string[], paymentRequired: false, claims: 0, failNext: [] as Array<{ status: number; retryAfter?: string }> };

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

  function accountSet(query: URLSearchParams) {
    const start = query.has('start-date') ? Number(query.get('start-date')) : undefined;
    const end = query.has('end-date') ? Number(query.get('end-date')) : undefined;
    const pending = query.get('pending') === '1';
    const only = query.getAll('account');
    const balancesOnly = query.get('balances-only') === '1';
    const listed = [...accounts.values()].filter((account) => only.length === 0 || only.includes(account.id));
    const body: Record<string, unknown> = {
      errors: state.errors,
      accounts: listed.map((account) => ({
        ...account,
        transactions: balancesOnly
          ? undefined
          : account.transactions.filter((tx) => {
              if (tx.pending) return pending;
              return (start === undefined || tx.posted >= start) && (end === undefined || tx.posted < end);
            }),
      })),
    };
    if (query.get('version') === '2') body.errlist = state.errors.map((msg) => ({ code: 'con.auth', msg }));
    return body;
  }

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://double');
    const credentials = basic(req);
    requests.push({ method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, at: Date.now(), basicUser: credentials?.user ?? null });
    req.resume();
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
    if (url.pathname === '/simplefin/info' && req.method === 'GET') return send(res, 200, { versions: ['1.0'] });
    if (url.pathname === '/simplefin/accounts' && req.method === 'GET') {
      if (!credentials || access.get(credentials.user) !== credentials.pass) return send(res, 403, 'Forbidden', 'text/plain');
      if (state.paymentRequired) return send(res, 402, 'Payment Required', 'text/plain');
      const fault = state.failNext.shift();
      if (fault) {
        if (fault.retryAfter) res.setHeader('retry-after', fault.retryAfter);
        return send(res, fault.status, 'Unavailable', 'text/plain');
      }
      return send(res, 200, accountSet(url.searchParams));
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
    /** Every access URL handed out stops working (403), as when the operator revokes the app at the bridge. */
    revokeAccess(): void {
      access.clear();
    },
    addAccount(account: BridgeAccount): void {
      accounts.set(account.id, structuredClone(account));
    },
    /** A bank unlinked at the bridge: its account is no longer listed. */
    removeAccount(id: string): void {
      accounts.delete(id);
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
