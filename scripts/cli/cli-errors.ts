/** Exit statuses of `pcg`, for scripts. */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

/** The command line itself is wrong: exit 2 with the usage hint. */
export class UsageError extends Error {}

/** The Console refused or failed the request, or could not be reached: exit 1. */
export class CommandFailed extends Error {}
