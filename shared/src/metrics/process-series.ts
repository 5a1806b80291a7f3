import { hostname } from 'node:os';

/**
 * The instance label of this process's series: the host (a container's id under compose) and the pid, so
 * a restarted container keeps its series and `process_start_time_seconds` says when its counters restarted.
 */
export const PROCESS_INSTANCE = `${hostname()}:${process.pid}`;

export type ProcessLabels = { service: string; instance: string };

/** A metric as `registry.getMetricsAsJSON()` gives it, the part read here. */
type MetricJson = { aggregator?: string; values: Array<{ labels?: Record<string, string | number> }> } & Record<string, unknown>;

/**
 * One process's series labelled with its service and instance, so the Console's scrape keeps every process
 * apart instead of adding processes up: each counter belongs to one process and resets only when that process
 * restarts (Prometheus's `rate()` handles it), with that process's `process_start_time_seconds` beside it.
 * prom-client marks the start time `omit` (meant for summing cluster workers); with one process per label set
 * nothing is summed, so `first` keeps it.
 */
export function labelProcessSeries(metrics: ReadonlyArray<object>, labels: ProcessLabels): MetricJson[] {
  return (metrics as MetricJson[]).map((metric) => ({
    ...metric,
    aggregator: metric.aggregator === 'omit' ? 'first' : metric.aggregator,
    values: metric.values.map((value) => ({ ...value, labels: { ...value.labels, ...labels } })),
  }));
}
