/** A JSON object: not null, not an array (the shape every JSON-RPC message and params object has). */
export const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
