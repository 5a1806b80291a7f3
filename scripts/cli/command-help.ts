/**
 * `pcg <command> --help`: the command's own lines, with its exit statuses where they say more than the
 * general ones (issue 39: help, behaviour and README say the same).
 */
const HELP: Record<string, string> = {
  'audit verify': `usage: pcg audit verify [--json]

Asks the Console to walk the audit record's hash chain (GET /api/audit/verify) and prints where it is intact,
or the first row edited, forged, removed, inserted or out of order, with the key and anchor it used.

exit status: 0 the chain is intact; 1 the chain is broken, or the Console refused or could not be reached
(the message on stderr says which); 2 usage error`,
  'audit tail': `usage: pcg audit tail [--agent A] [--tool T] [--decision allow|deny] [--sector S] [--since ISO] [--before CURSOR] [--limit N] [--json]

The newest rows of the audit record (20 by default), newest last; Time is each row's created_at.
exit status: 0 done, 1 refused or failed, 2 usage error`,
  status: `usage: pcg status [--json]

Whether everything is all right: the overall state and each problem with what mends it, then the agent port,
the stores, the processes, the connections, the sync queue and the audit record. --json prints the Console's
answer (GET /api/status) for scripts.

exit status: 0 the Console answered, 1 a store is down (the status is still printed) or no Console answers, 2 usage error`,
};

export function helpFor(positionals: readonly string[]): string | undefined {
  return HELP[positionals.slice(0, 2).join(' ')] ?? HELP[positionals[0] ?? ''];
}
