import parsePrometheusTextFormat, { type ParsedFamily } from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '@pcg/shared/db';
import { useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { connectAgent } from '../../services/gateway/test/gateway-harness.ts';
import { loadConfig } from '@pcg/shared/config';
import { createCapturingLogger } from '@pcg/testkit/testing';
import { syncWorkerConfigSchema } from '../../services/sync-worker/src/config.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../services/sync-worker/src/service.ts';
import { startAuditWriter } from '../../services/audit-writer/src/service.ts';
import { auditWriterConfigSchema } from '../../services/audit-writer/src/config.ts';
import { startConsoleAndGateway } from './ops-harness.ts';

const testEnv = useTestEnvironment();
let stack: Awaited<ReturnType<typeof startConsoleAndGateway>>;
let worker: RunningSyncWorker;
let auditWriter: Awaited<ReturnType<typeof startAuditWriter>>;

/** The four services the launcher runs (issue 42: each one's process and runtime series). */
const SERVICES = ['console', 'gateway', 'audit-writer', 'sync-worker'];

beforeAll(async () => {
  // Published every 200 ms so a test sees a tool call quickly; the default is every 5 s.
  stack = await startConsoleAndGateway(testEnv, { METRICS_PUBLISH_MS: '200' });
  const env = testEnv.env({ METRICS_PUBLISH_MS: '200', AUDIT_FLUSH_MS: '100' });
  worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, env), createCapturingLogger('sync-worker').log);
  auditWriter = await startAuditWriter(loadConfig(auditWriterConfigSchema, env), createCapturingLogger('audit-writer').log);
});
afterAll(async () => {
  await worker?.close();
  await auditWriter?.close();
  await stack?.close();
});

type Scrape = ParsedFamily[] & { text: string };

async function scrape(): Promise<Scrape> {
  const response = await fetch(`${stack.console.address}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await response.text();
  return Object.assign(parsePrometheusTextFormat(text), { text });
}

/**
 * One sample line read from the text itself: the parser folds a histogram's series into one and drops
 * their labels, so a labelled histogram's `_count` is read here.
 */
function sample(text: string, series: string, labels: Record<string, string>): number {
  const pairs = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series}{`) && pairs.every((pair) => candidate.includes(pair)));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

const family = (families: ParsedFamily[], name: string) => families.find((candidate) => candidate.name === name);
function valueOf(families: ParsedFamily[], name: string, labels: Record<string, string> = {}): number | undefined {
  const metric = family(families, name)?.metrics.find((candidate) => Object.entries(labels).every(([key, value]) => candidate.labels?.[key] === value));
  return metric && 'value' in metric ? Number(metric.value) : undefined;
}

describe('GET /metrics on the Console port', () => {
  it('serves every metric the issue names in Prometheus text format', async () => {
    await testEnv.db.query(sql.unsafe`
      INSERT INTO connections (user_id, sector, provider, display_name, status, last_synced_at)
      VALUES (1, 'home', 'home_assistant', 'Hub', 'active', now() - interval '90 seconds')`);
    const families = await waitFor(async () => {
      const scraped = await scrape();
      return valueOf(scraped, 'pcg_metrics_processes', { service: 'gateway' }) === 1 ? scraped : undefined;
    }, 10_000, 'the gateway to publish its metrics');
    const names = families.map((candidate) => candidate.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'pcg_mcp_sessions_open',
        'pcg_tool_calls_total',
        'pcg_tool_duration_seconds',
        'pcg_audit_rows_queued_total',
        'pcg_audit_rows_written_total',
        'pcg_audit_rows_dropped_total',
        'pcg_audit_queue_depth',
        'pcg_sync_runs_total',
        'pcg_sync_failures_total',
        'pcg_connection_data_age_seconds',
        'pcg_live_request_duration_seconds',
        'pcg_bridge_tokens_issued_total',
        'pcg_bridge_tokens_refused_total',
      ]),
    );
    expect(family(families, 'pcg_tool_duration_seconds')?.type).toBe('HISTOGRAM');
    expect(valueOf(families, 'pcg_audit_rows_dropped_total', { reason: 'queue_overflow' })).toBe(0);
    expect(valueOf(families, 'pcg_connection_data_age_seconds', { sector: 'home', provider: 'home_assistant' })).toBeGreaterThanOrEqual(90);
  });

  it('moves the tool-call counter, the latency histogram and the session gauge after a tool call through /mcp', async () => {
    const created = await fetch(`${stack.console.address}/api/agents`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'metered', sectors: ['home'] }),
    });
    const { key } = (await created.json()) as { key: string };
    const before = await scrape();
    const calls = (families: ParsedFamily[]) => valueOf(families, 'pcg_tool_calls_total', { tool: 'describe_context', decision: 'allow', service: 'gateway' }) ?? 0;
    const denied = (families: ParsedFamily[]) => valueOf(families, 'pcg_tool_calls_total', { tool: 'query', decision: 'deny', service: 'gateway' }) ?? 0;

    const { client } = await connectAgent(stack.gateway.address, key);
    await client.callTool({ name: 'describe_context', arguments: {} });
    await client.callTool({ name: 'query', arguments: { object: 'finance.transaction' } });
    const timed = (scraped: Scrape) => sample(scraped.text, 'pcg_tool_duration_seconds_count', { tool: 'describe_context', service: 'gateway' });
    // The counter moves when the row is recorded, the histogram when the answer is sent: wait for both.
    const after = await waitFor(async () => {
      const scraped = await scrape();
      return calls(scraped) === calls(before) + 1 && denied(scraped) === denied(before) + 1 && timed(scraped) === timed(before) + 1 ? scraped : undefined;
    }, 10_000, 'the tool-call counter and the latency histogram to move');
    expect(valueOf(after, 'pcg_mcp_sessions_open', { service: 'gateway' })).toBe(1);
    await waitFor(async () => ((valueOf(await scrape(), 'pcg_audit_rows_queued_total', { service: 'gateway' }) ?? 0) >= 2 ? true : undefined), 10_000, 'the queued audit rows to be counted');
    await client.close();
  });

  it('has Node\'s process and runtime series for each of the four services, labelled by service, each with its start time', async () => {
    const families = await waitFor(async () => {
      const scraped = await scrape();
      return SERVICES.every((service) => valueOf(scraped, 'pcg_metrics_processes', { service }) === 1) ? scraped : undefined;
    }, 10_000, 'every service to publish its metrics');
    // prom-client's default metrics (collectDefaultMetrics), by their Prometheus names.
    for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'process_start_time_seconds', 'nodejs_heap_size_used_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_active_handles_total']) {
      for (const service of SERVICES) {
        const value = valueOf(families, name, { service });
        expect(value, `${name}{service="${service}"}`).toBeGreaterThan(0);
      }
    }
    // Counters are per process: each service's own series, beside the start time of the process that holds it.
    const startedAt = valueOf(families, 'process_start_time_seconds', { service: 'gateway' }) ?? 0;
    expect(startedAt).toBeGreaterThan(Date.parse('2020-01-01') / 1000);
    expect(family(families, 'pcg_audit_rows_written_total')?.metrics.map((metric) => metric.labels?.service).sort()).toEqual([...SERVICES].sort());
    expect(family(families, 'process_start_time_seconds')?.metrics.every((metric) => typeof metric.labels?.instance === 'string' && metric.labels.instance.length > 0)).toBe(true);
  });

  it('labels data age with the connection\'s id, display name and provider', async () => {
    const inserted = await testEnv.db.one(sql.unsafe`
      INSERT INTO connections (user_id, sector, provider, display_name, status, last_synced_at)
      VALUES (1, 'calendar', 'google', 'Work calendar', 'active', now() - interval '120 seconds') RETURNING id::text AS id`);
    const families = await scrape();
    const ages = family(families, 'pcg_connection_data_age_seconds')?.metrics ?? [];
    const row = ages.find((metric) => metric.labels?.connection === (inserted as { id: string }).id);
    expect(row?.labels).toMatchObject({ name: 'Work calendar', provider: 'google', sector: 'calendar' });
    expect(row && 'value' in row ? Number(row.value) : 0).toBeGreaterThanOrEqual(120);
  });

  it('shows the audit chain as the last verification found it, and nothing before one ran', async () => {
    expect((await scrape()).text).not.toContain('pcg_audit_chain_intact');
    const verified = await fetch(`${stack.console.address}/api/audit/verify`);
    expect(verified.status).toBe(200);
    const text = (await scrape()).text;
    expect(text).toMatch(/^pcg_audit_chain_intact 1$/m);
    expect(text).toMatch(/^pcg_audit_chain_verified_timestamp_seconds \d+/m);
  });

  it('is behind the Host check like the rest of the Console', async () => {
    const url = new URL(`${stack.console.address}/metrics`);
    const { request } = await import('node:http');
    const status = await new Promise<number>((resolve, reject) => {
      request({ host: url.hostname, port: url.port, path: '/metrics', headers: { host: 'evil.example' } }, (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      })
        .on('error', reject)
        .end();
    });
    expect(status).toBe(403);
  });
});
