import type { Job } from 'bullmq';
import type { LiveJob, LiveJobResult } from '@pcg/shared/queues';
import { buildConnectorContext } from '../run/connector-context.ts';
import { createFailureMapper, ShutdownError, withTokenRefresh } from '../run/failure-mapper.ts';
import type { SyncRunnerDeps } from '../sync/sync-runner.ts';

/** The same dependencies as a sync: the connection store, the connectors and the credentials key. */
export type LiveRunnerDeps = SyncRunnerDeps;

const GATEWAY_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Serves one `fetch_live` or `invoke_action` job, once. It always completes with an answer or a failure
 * message that is safe to show an agent; it never throws, so BullMQ never retries it. Past the caller's
 * deadline it does not touch the source at all. An expired access token is refreshed once and the request
 * run once more (a source that answered 401 did not carry out the action).
 */
export function createLiveRunner(deps: LiveRunnerDeps) {
  const failures = createFailureMapper(deps);
  const failed = (message: string): LiveJobResult => ({ status: 'failed', message });

  return async function runLive(job: Job, data: LiveJob, _token: string | undefined, signal: AbortSignal | undefined): Promise<LiveJobResult> {
    const remaining = data.deadline - Date.now();
    if (remaining <= 0) return failed('the request expired before a worker took it');
    const connection = await deps.store.load(data.connectionId);
    if (!connection) return failed('the connection no longer exists');
    if (connection.status !== 'active' && connection.status !== 'error') return failed(`the connection is ${connection.status.replace('_', ' ')}`);
    const connector = deps.registry.get(connection.provider, connection.demo_endpoints);
    const log = deps.log.child({ connectionId: connection.id, provider: connection.provider, jobId: job.id, kind: data.kind });
    const deadline = AbortSignal.timeout(remaining);
    const aborted = signal ? AbortSignal.any([signal, deadline]) : deadline;
    try {
      const context = buildConnectorContext(deps, connection, { signal: aborted, requestTimeoutMs: Math.min(deps.requestTimeoutMs, remaining), log });
      if (data.kind === 'fetch_live') {
        const fetchLive = connector?.fetchLive?.bind(connector);
        if (!connector) return failed(`no connector for provider '${connection.provider}' runs in the sync-worker, so there is no source to ask; query the cache instead`);
        // Say why only when it is true: a source without live reads is not always one that pushes.
        const pushed = connector.provider.signIn === 'push' ? ' (its data is pushed to the gateway)' : '';
        if (!fetchLive) return failed(`${connection.display_name || connection.provider} cannot be read live${pushed}; query the cache instead`);
        const id = data.id !== undefined && GATEWAY_ID.test(data.id) && connector.provider.objects.includes(data.object) ? ((await deps.store.sourceIdOf(connection.id, data.object, data.id)) ?? data.id) : data.id;
        const value = await withTokenRefresh(context, () => fetchLive(context, { object: data.object, id, where: data.where }));
        return { status: 'answered', value };
      }
      const invoke = connector?.invokeAction?.bind(connector);
      if (!invoke) return { status: 'answered', value: { ok: false, error: `${connection.display_name || connection.provider} offers no actions` } };
      const value = await withTokenRefresh(context, () => invoke(context, { name: data.name, arguments: data.arguments }));
      log.info({ action: data.name, ok: value.ok }, 'action invoked');
      return { status: 'answered', value };
    } catch (error) {
      if (deadline.aborted && !signal?.aborted) return failed('the source did not answer before the request timed out');
      return failures.live(signal?.aborted ? new ShutdownError() : error, data, log);
    }
  };
}
