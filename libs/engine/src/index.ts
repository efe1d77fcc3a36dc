// @po/engine: results, expiries and dispatcher passes as one batched transaction (decision 0061).
export { Engine, createPassRunner, type EngineDeps, type PassRequest } from './engine.js';
export type { EngineItem, ItemOutcome } from './batch.js';
export { byQueue, stageNextMessage, type MessageSource } from './messages.js';
export type { LostMessage } from './republish.js';
// The lifecycle steps outside a batch: each writes stage and execution state, and nothing outside
// this package does (issue 28).
export * from './steps/lease.js';
export * from './steps/renew.js';
export * from './steps/cancel.js';
export * from './steps/resume.js';
export * from './steps/dispatch.js';
export * from './steps/create.js';
export * from './steps/rerun.js';
export * from './steps/fire.js';
export * from './steps/fire-ticks.js';
