/**
 * A record or data point of a push that was not stored: where it is in the payload (`records[3]`,
 * `data.metrics[0].data[5]`), the field at fault, and what is allowed.
 */
export type RejectedRecord = { record: string; field: string; error: string };
