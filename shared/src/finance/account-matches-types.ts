import { z } from 'zod';

/** `POST /api/finance/account-matches/:id`: the operator's answer to one question. */
export const AccountMatchAnswerSchema = z.strictObject({
  same: z.boolean({ error: 'send true ("same account") or false ("keep separate")' }),
});
export type AccountMatchAnswer = z.infer<typeof AccountMatchAnswerSchema>;

export const AccountMatchParamsSchema = z.object({
  id: z.uuid({ error: 'expected the id of an account match from GET /api/finance/account-matches' }),
});

/** One side of a pair as the Console shows it; the account fields are null while the account is not cached. */
export const MatchSideViewSchema = z.object({
  connectionId: z.string(),
  connectionName: z.string(),
  provider: z.string(),
  sourceId: z.string(),
  /** Gateway id of the cached account, null when the source no longer lists it. */
  accountId: z.string().nullable(),
  institutionName: z.string().nullable(),
  name: z.string().nullable(),
  mask: z.string().nullable(),
  lastFour: z.string().nullable(),
});
export type MatchSideView = z.infer<typeof MatchSideViewSchema>;

export const AccountMatchViewSchema = z.object({
  id: z.string(),
  institutionDomain: z.string(),
  /** `open`: waiting for the operator; `same`: merged (automatically or by answer); `separate`: kept apart. */
  state: z.enum(['open', 'same', 'separate']),
  /** Both sides report the same last 4 digits: merged without asking, nothing to answer. */
  automatic: z.boolean(),
  answeredAt: z.string().nullable(),
  createdAt: z.string(),
  /** The earlier connection's account: the one agents see when the pair is merged. */
  first: MatchSideViewSchema,
  second: MatchSideViewSchema,
  /**
   * The accounts' transactions as matched one by one today (design 8.3): `both`, real transactions both
   * copies have (merged when the pair is the same, possible twins while it is open); `onlyFirst` and
   * `onlySecond`, those only one copy has, which agents always see.
   */
  transactions: z.object({ both: z.number(), onlyFirst: z.number(), onlySecond: z.number() }),
});
export type AccountMatchView = z.infer<typeof AccountMatchViewSchema>;

export const AccountMatchListSchema = z.object({
  open: z.array(AccountMatchViewSchema),
  decided: z.array(AccountMatchViewSchema),
});
export type AccountMatchList = z.infer<typeof AccountMatchListSchema>;
