export * from './versions.ts';
export * from './messages.ts';
export * from './gpu-types.ts';
export * from './close-codes.ts';
export * from './http-routes.ts';
export * from './folders.ts';
