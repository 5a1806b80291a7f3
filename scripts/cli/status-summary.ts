import { z } from 'zod';

const plural = (count: number, one: string, many = `${one}s`) => `${count} ${count === 1 ? one : many}`;
const Unavailable = z.object({ unavailable: z.string() });
const Counts = z.union([z.record(z.string(), z.number()), Unavailable]);

/** What `pcg status` reads of `GET /api/status`; parts it cannot read are shown as unknown, never a crash. */
const StatusSchema = z.object({
  overall: z.object({ state: z.enum(['ok', 'attention', 'failing']), problems: z.array(z.object({ message: z.string(), mend: z.string() })) }).optional(),
  dependencies: z.object({ postgres: z.string(), redis: z.string() }),
  mcp: z.object({ served: z.boolean().nullable(), address: z.string().optional(), sessions: z.number().optional(), message: z.string().optional(), unavailable: z.string().optional() }),
  processes: z.array(z.object({ name: z.string(), state: z.string(), version: z.string().nullable(), uptimeSeconds: z.number().nullable() })).optional(),
  connections: z.union([z.array(z.object({ health: z.string().optional(), status: z.string() })), Unavailable]),
  queues: z.object({ sync: Counts, live: Counts }),
  audit: z.object({ queued: z.union([z.number(), Unavailable]), dropped: Counts }),
});

const OVERALL = { ok: 'All is well', attention: 'Needs attention', failing: 'Failing' } as const;

function uptime(seconds: number | null): string {
  if (seconds === null) return '';
  if (seconds < 90) return `up ${seconds} s`;
  if (seconds < 90 * 60) return `up ${Math.round(seconds / 60)} min`;
  if (seconds < 48 * 3600) return `up ${Math.floor(seconds / 3600)} h ${Math.round((seconds % 3600) / 60)} min`;
  return `up ${Math.floor(seconds / 86400)} d ${Math.round((seconds % 86400) / 3600)} h`;
}

function counts(value: z.infer<typeof Counts>): string {
  if ('unavailable' in value && typeof value.unavailable === 'string') return value.unavailable;
  return Object.entries(value).map(([key, count]) => `${count} ${key}`).join(', ');
}

/** `pcg status` for a person: the overall state and its problems first, then one line per part. */
export function statusSummary(body: unknown, consoleBase: string): string {
  const parsed = StatusSchema.safeParse(body);
  if (!parsed.success) return `${consoleBase} answered a status this pcg cannot read; try --json\n`;
  const status = parsed.data;
  const lines: string[] = [];
  if (status.overall) {
    const { state, problems } = status.overall;
    lines.push(problems.length === 0 ? OVERALL[state] : `${OVERALL[state]}: ${plural(problems.length, 'problem')}`);
    for (const problem of problems) lines.push(`  - ${problem.message}`, `    ${problem.mend}`);
  }
  const mcp = status.mcp;
  lines.push(`Agent port   ${mcp.served === true ? `served at ${mcp.address ?? '?'}, ${plural(mcp.sessions ?? 0, 'session')} open` : (mcp.message ?? mcp.unavailable ?? 'unknown')}`);
  lines.push(`Stores       Postgres ${status.dependencies.postgres}, Redis ${status.dependencies.redis}`);
  if (status.processes) {
    lines.push(`Processes    ${status.processes.map((process) => (process.state === 'running' ? `${process.name} ${process.version ?? ''} ${uptime(process.uptimeSeconds)}`.replace(/\s+/g, ' ').trim() : `${process.name} not seen`)).join('; ')}`);
  }
  if (Array.isArray(status.connections)) {
    const byHealth = new Map<string, number>();
    for (const connection of status.connections) {
      const health = (connection.health ?? connection.status).replaceAll('_', ' ');
      byHealth.set(health, (byHealth.get(health) ?? 0) + 1);
    }
    const detail = [...byHealth].map(([health, count]) => `${count} ${health}`).join(', ');
    lines.push(`Connections  ${plural(status.connections.length, 'connection')}${detail ? ` (${detail})` : ''}`);
  } else lines.push(`Connections  ${status.connections.unavailable}`);
  lines.push(`Sync queue   ${counts(status.queues.sync)}`);
  lines.push(`Audit        ${typeof status.audit.queued === 'number' ? `${plural(status.audit.queued, 'row')} waiting` : status.audit.queued.unavailable}; dropped: ${counts(status.audit.dropped)}`);
  lines.push(`Console      ${consoleBase}`);
  return `${lines.join('\n')}\n`;
}
