export * from './provider-catalogue.ts';
