export * from './readiness.js';
export * from './pipeline-status.js';
export * from './retry.js';
export * from './failure.js';
export * from './lease.js';
export * from './fencing.js';
export * from './sweep.js';
export * from './result.js';
