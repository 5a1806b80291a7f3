import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { AuditEvent, AuditProducer, AuditRecorder } from '../audit/index.ts';
import type { LiveRequester } from '../live/index.ts';

/** The seven tools of the agent port; tool calls are counted for these names only. */
export const MCP_TOOL_NAMES = ['describe_context', 'get_schema', 'query', 'get_record', 'fetch_live', 'list_actions', 'invoke_action'] as const;

/** The audit `tool` of the bridge's token endpoint. */
const BRIDGE_TOKEN_TOOL = 'oauth_token';

/** Seconds; tool calls and live reads range from a cached read (ms) to a source timing out (tens of s). */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * The counters a service process keeps in memory. Every process builds the same catalogue, so the
 * Console can add the snapshots of all processes up metric by metric; a process simply leaves at zero
 * what it never does. Values that are durable (drops, data age) or shared (queue depth) are not here:
 * the Console reads them from Postgres and Redis when it is scraped.
 */
export function createMetrics() {
  const registry = new Registry();
  // Node's process and runtime series (CPU, memory, event-loop lag, GC, handles, start time) of this process.
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  const producers: Array<Pick<AuditProducer, 'stats'>> = [];
  const writers: Array<() => number> = [];
  const sessionCounts: Array<() => number> = [];

  const toolCalls = new Counter({
    name: 'pcg_tool_calls_total',
    help: 'MCP tool calls, by tool and audit decision (allow or deny).',
    labelNames: ['tool', 'decision'] as const,
    registers,
  });
  const toolSeconds = new Histogram({
    name: 'pcg_tool_duration_seconds',
    help: 'Time to answer an MCP tool call, by tool.',
    labelNames: ['tool'] as const,
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const liveSeconds = new Histogram({
    name: 'pcg_live_request_duration_seconds',
    help: 'Time a live read or action took through the sync-worker, by kind and result.',
    labelNames: ['kind', 'result'] as const,
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const bridgeTokensIssued = new Counter({
    name: 'pcg_bridge_tokens_issued_total',
    help: 'Access tokens the OAuth bridge issued, by grant type.',
    labelNames: ['grant'] as const,
    registers,
  });
  const bridgeTokensRefused = new Counter({
    name: 'pcg_bridge_tokens_refused_total',
    help: 'Token requests the OAuth bridge refused and recorded.',
    registers,
  });
  const syncRuns = new Counter({ name: 'pcg_sync_runs_total', help: 'Sync runs that reached a source, by provider.', labelNames: ['provider'] as const, registers });
  const syncFailures = new Counter({ name: 'pcg_sync_failures_total', help: 'Sync runs that failed, by provider.', labelNames: ['provider'] as const, registers });
  new Counter({
    name: 'pcg_audit_rows_queued_total',
    help: 'Audit rows this set of processes queued in Redis since they started.',
    registers,
    collect() {
      this.reset();
      this.inc(producers.reduce((sum, producer) => sum + producer.stats().queued, 0));
    },
  });
  new Counter({
    name: 'pcg_audit_rows_written_total',
    help: 'Audit rows the audit-writers inserted into Postgres since they started.',
    registers,
    collect() {
      this.reset();
      this.inc(writers.reduce((sum, written) => sum + written(), 0));
    },
  });
  new Gauge({
    name: 'pcg_mcp_sessions_open',
    help: 'Open MCP sessions on the agent port.',
    registers,
    collect() {
      this.set(sessionCounts.reduce((sum, count) => sum + count(), 0));
    },
  });

  /** Counts an audited call when the event is recorded: the decision is known only there. */
  function count(event: AuditEvent): void {
    if ((MCP_TOOL_NAMES as readonly string[]).includes(event.tool)) toolCalls.inc({ tool: event.tool, decision: event.decision });
    if (event.tool === BRIDGE_TOKEN_TOOL) {
      if (event.decision === 'deny') bridgeTokensRefused.inc();
      else if (event.outcome !== 'error') bridgeTokensIssued.inc({ grant: String((event.args as { grant?: unknown } | null)?.grant ?? 'unknown') });
    }
  }

  return {
    registry,
    toolSeconds,
    syncRuns,
    syncFailures,
    /** The producer's `queued` count is reported with this process's metrics. */
    watchAuditProducer(producer: Pick<AuditProducer, 'stats'>): void {
      producers.push(producer);
    },
    watchAuditWriter(written: () => number): void {
      writers.push(written);
    },
    watchSessions(open: () => number): void {
      sessionCounts.push(open);
    },
    /** The same recorder, counting tool calls and bridge tokens by the rows they leave. */
    countingRecorder<R extends AuditRecorder & Partial<Pick<AuditProducer, 'enqueue'>>>(recorder: R): R {
      const { enqueue } = recorder;
      return {
        ...recorder,
        record(event: AuditEvent) {
          count(event);
          recorder.record(event);
        },
        ...(enqueue && {
          enqueue(event: AuditEvent) {
            count(event);
            return enqueue(event);
          },
        }),
      };
    },
    /** The same requester, timing each live read and action. */
    timedLive(live: LiveRequester): LiveRequester {
      const timed = async <T>(kind: string, run: () => Promise<T>): Promise<T> => {
        const stop = liveSeconds.startTimer({ kind });
        try {
          const result = await run();
          stop({ result: 'ok' });
          return result;
        } catch (error) {
          stop({ result: 'error' });
          throw error;
        }
      };
      return {
        fetchLive: (request) => timed('fetch_live', () => live.fetchLive(request)),
        invokeAction: (request) => timed('invoke_action', () => live.invokeAction(request)),
      };
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
