declare module 'parse-prometheus-text-format' {
  type Labels = Record<string, string>;
  export type ParsedMetric =
    | { value: string; labels?: Labels; timestamp_ms?: string }
    | { buckets: Record<string, string>; count: string; sum: string; labels?: Labels };
  export type ParsedFamily = { name: string; help: string; type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED'; metrics: ParsedMetric[] };
  export default function parsePrometheusTextFormat(text: string): ParsedFamily[];
}
