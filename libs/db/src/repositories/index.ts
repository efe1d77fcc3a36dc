export * from './api-keys.js';
export * from './pipelines.js';
export * from './idempotency-keys.js';
export * from './stages.js';
export * from './context-items.js';
export * from './system-logs.js';
export * from './dispatch.js';
