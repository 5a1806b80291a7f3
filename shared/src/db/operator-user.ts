/** The single operator user seeded by the first migration (spec 2.2, 2.3); every row of every table belongs to it. */
export const OPERATOR_USER_ID = 1;
