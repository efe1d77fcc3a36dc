export * from './errors.js';
export * from './statuses.js';
export * from './stage-definition.js';
export * from './creation-intent.js';
export * from './pipeline-definition.js';
export * from './ids.js';
export * from './redaction.js';
export * from './approval.js';
