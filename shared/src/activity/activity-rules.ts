/**
 * The documented alert rules (design 8.5, issue 41; docs/decisions.md "Activity and alerts").
 * - refusal burst: at least `REFUSAL_BURST_COUNT` denied calls by one agent within `REFUSAL_BURST_MINUTES`;
 *   one alert per burst (no second one for that agent until the window has passed).
 * - volume spike: an agent's calls on one UTC day are at least `VOLUME_SPIKE_MIN_CALLS` and more than
 *   `VOLUME_SPIKE_FACTOR` times the median of its previous `VOLUME_BASELINE_DAYS` active days (days with any
 *   call); an agent with no earlier active day has no usual yet and raises none.
 */
export const REFUSAL_BURST_COUNT = 10;
export const REFUSAL_BURST_MINUTES = 5;
export const VOLUME_SPIKE_FACTOR = 10;
export const VOLUME_SPIKE_MIN_CALLS = 100;
export const VOLUME_BASELINE_DAYS = 14;

/** The agent name Console acts are recorded under (spec 2.3); they are not an agent's use. */
export const OPERATOR_AGENT = 'operator';

export const ALERT_KINDS = ['first_sector', 'first_object', 'refusal_burst', 'volume_spike', 'needs_person'] as const;
export type AlertKind = (typeof ALERT_KINDS)[number];
