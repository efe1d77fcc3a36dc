export * from './cron.js';
export * from './plan.js';
export * from './jitter.js';
export * from './catchup.js';
export * from './overlap.js';
export * from './health.js';
export * from './upsert.js';
export * from './due.js';
