import { z } from 'zod';

/** A filter of the `where` list, the same shape `query` takes. */
export const LiveFilterSchema = z.object({ field: z.string(), op: z.string(), value: z.unknown().optional() });

/** A live read handed to the sync-worker through the `live` queue (design 4.3, 4.8). */
export const LiveFetchRequestSchema = z.object({
  kind: z.literal('fetch_live'),
  connectionId: z.uuid(),
  /** Catalogue object name, e.g. `home.entity`. */
  object: z.string(),
  /** The gateway id or the source id of one record; absent reads what `where` selects. */
  id: z.string().optional(),
  where: z.array(LiveFilterSchema).optional(),
});
export type LiveFetchRequest = z.infer<typeof LiveFetchRequestSchema>;

/** Rows straight from the source, in catalogue field names; never written to the cache. */
export const LiveFetchResultSchema = z.object({ rows: z.array(z.record(z.string(), z.unknown())) });
export type LiveFetchResult = z.infer<typeof LiveFetchResultSchema>;

export const ActionInvokeRequestSchema = z.object({
  kind: z.literal('invoke_action'),
  connectionId: z.uuid(),
  /** `<sector>.<domain>.<service>`, e.g. `home.light.turn_on`. */
  name: z.string(),
  arguments: z.record(z.string(), z.unknown()).default({}),
});
export type ActionInvokeRequest = z.input<typeof ActionInvokeRequestSchema>;

/** A source's own rejection is `ok: false` with its error, an ordinary result (spec 4.1). */
export const ActionResultSchema = z.union([
  z.object({ ok: z.literal(true), result: z.unknown().optional() }),
  z.object({ ok: z.literal(false), error: z.string() }),
]);
export type ActionResult = z.infer<typeof ActionResultSchema>;

/** An action a connection offers (design 4.3 `list_actions`). */
export const ActionDefSchema = z.object({
  name: z.string(),
  sector: z.string(),
  description: z.string(),
  input_schema: z.record(z.string(), z.unknown()),
});
export type ActionDef = z.infer<typeof ActionDefSchema>;

/**
 * Sends live requests to the sync-worker and awaits the answer with a timeout. Actions are never
 * retried. A timeout or a worker failure rejects with an error whose message is safe to show an agent.
 */
export type LiveRequester = {
  fetchLive(request: Omit<LiveFetchRequest, 'kind'>): Promise<LiveFetchResult>;
  invokeAction(request: Omit<ActionInvokeRequest, 'kind'>): Promise<ActionResult>;
};
