export * from './messages.ts';
export * from './gpu-types.ts';
