export * from './sector-names.ts';
export * from './catalogue-types.ts';
export * from './catalogue.ts';
export * from './sql-types.ts';
