/** The shapes the page reads from the Console's routes (their schemas live in the Console process). */
export const SECTORS = ['finance', 'health', 'mail', 'contacts', 'calendar', 'home'] as const;

export type Agent = { name: string; sectors: string[]; createdAt: string; expiresAt: string | null; revokedAt: string | null; updatedAt: string; status: 'active' | 'revoked' | 'expired' };
export type IssuedKey = { name: string; sectors: string[]; createdAt: string; expiresAt: string | null; key: string };

export type AuditRow = {
  id: string;
  agent_id: string | null;
  tool: string;
  sector: string | null;
  decision: 'allow' | 'deny';
  deny_reason: string | null;
  args: unknown;
  result_count: number;
  outcome: 'ok' | 'error';
  request_id: string;
  created_at: string;
};

export type JsonSchema = { type?: string; format?: string; properties?: Record<string, JsonSchema>; required?: string[]; minLength?: number; maxLength?: number; description?: string; title?: string };

export type Provider = {
  kind: string;
  displayName: string;
  sectors: string[];
  objects: string[];
  signIn: string;
  defaultSyncIntervalMinutes: number | null;
  credentials: JsonSchema | null;
  oauth: { scopes: string[]; appSaved: boolean; callbackPath: string } | null;
  link: { appSaved: boolean; environments: string[]; callbackPath: string } | null;
  /** A setup token is pasted and claimed once, instead of credentials typed in. */
  claim: boolean;
};

export type MatchSide = {
  connectionId: string;
  connectionName: string;
  provider: string;
  sourceId: string;
  accountId: string | null;
  institutionName: string | null;
  name: string | null;
  mask: string | null;
  lastFour: string | null;
};

/** A pair of finance accounts two connections both deliver (spec 2.1); `first` is the copy agents see when merged. */
export type AccountMatch = {
  id: string;
  institutionDomain: string;
  state: 'open' | 'same' | 'separate';
  automatic: boolean;
  answeredAt: string | null;
  createdAt: string;
  first: MatchSide;
  second: MatchSide;
};

export type ClaimAnswer =
  | { status: 'confirm'; claimHost: string; https: boolean }
  | { status: 'signed_in'; signInId: string; claimHost: string; connections: Connection[] };

export type SignIn = {
  id: string;
  provider: string;
  providerName: string;
  signIn: string;
  status: 'active' | 'needs_sign_in';
  grantedScopes: string[];
  accountId: string | null;
  lastRefreshedAt: string | null;
  lastError: string | null;
  createdAt: string;
  updatedAt: string;
  connections: Array<{ id: string; sector: string; displayName: string; status: string }>;
};

export type Connection = {
  id: string;
  provider: string;
  providerName: string;
  sector: string;
  displayName: string;
  status: string;
  health: string;
  signIn: string;
  signInId: string | null;
  syncIntervalMinutes: number | null;
  lastSyncedAt: string | null;
  lastError: string | null;
  actionCount: number;
  ingestPath?: string;
  hasIngestSecret: boolean;
  consentExpiresAt?: string;
  createdAt: string;
  updatedAt: string;
};

export type Settings = { publicOrigin: string | null; mcpUrl: string | null; timeZone: string; timeZoneSource: 'setting' | 'hub' | 'machine' };

export type Unavailable = { unavailable: string };
export type StatusProblem = { problem: string; severity: 'failing' | 'attention'; message: string; mend: string; connectionId?: string; process?: string };
export type ProcessState = { name: string; state: 'running' | 'not_seen'; version: string | null; startedAt: string | null; uptimeSeconds: number | null };
export type FailedJob = { jobId: string; connectionId: string | null; connectionName: string | null; failedAt: string; attempts: number; error: string };
export type Status = {
  overall: { state: 'ok' | 'attention' | 'failing'; problems: StatusProblem[] };
  processes: ProcessState[];
  failedJobs: FailedJob[] | Unavailable;
  chain: { intact: boolean; verifiedAt: string } | null;
  dependencies: { postgres: string; redis: string };
  mcp: { served: true; address: string; sessions: number; lastSeenAt: string } | { served: false; message: string } | ({ served: null } & Unavailable);
  queues: { sync: Record<string, number> | Unavailable; live: Record<string, number> | Unavailable };
  connections: Array<{ id: string; sector: string; provider: string; display_name: string; status: string; health: string; last_synced_at: string | null; last_error: string | null }> | Unavailable;
  audit: { queued: number | Unavailable; dropped: unknown };
};
