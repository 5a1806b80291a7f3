export * from './errors.ts';
export * from './error-handler.ts';
export * from './create-http-app.ts';
export * from './data-exception.ts';
export * from './host-names.ts';
export * from './store-unavailable.ts';
