import type { z } from 'zod';
import type { Caller } from '@pcg/shared/reads';

export type ToolAnnotations = { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean };

/**
 * One MCP tool. `inputSchema` documents the input in tools/list; the handler receives the raw
 * arguments and validates them itself, so that a malformed call is still audited like any other.
 */
export type ToolDef = {
  name: string;
  title: string;
  description: string;
  inputSchema: z.ZodType;
  annotations: ToolAnnotations;
  handler(args: unknown, caller: Caller & { kind: 'agent' }): Promise<unknown>;
};
