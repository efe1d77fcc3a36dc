// @po/engine: results, expiries and dispatcher passes as one batched transaction (decision 0061).
export { Engine, createPassRunner, type EngineDeps, type PassRequest } from './engine.js';
export type { EngineItem, ItemOutcome } from './batch.js';
export { byQueue, stageNextMessage, type MessageSource } from './messages.js';
