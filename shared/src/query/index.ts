export * from './query-input.ts';
export * from './query-errors.ts';
export * from './query-plan.ts';
export * from './query-cursor.ts';
export * from './query-engine.ts';
export * from './query-values.ts';
export * from './query-budget.ts';
export * from './query-dates.ts';
