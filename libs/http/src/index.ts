export { createHttpApp, type HttpAppOptions, type AppState, type AppContext } from './app.js';
export { bodyEtag, conditionalGet, matchesIfNoneMatch } from './conditional.js';
export { bodyKeyAuth, jsonBody, optionalJsonBody } from './body.js';
export { pathParam, queryParams } from './params.js';
export { apiKeyAuth, hashSecret, type ApiKeyResolver, type AuthenticatedApp } from './auth.js';
export { healthRouter, type HealthOptions, type ReadinessCheck } from './health.js';
export { listenMetrics } from './metrics.js';
export { listen, type RunningServer } from './server.js';
export { onShutdown, type ShutdownStep } from './shutdown.js';
export { problemStatus, toProblem } from './problem.js';
export { clientGone, sendJson, sendEmpty } from './respond.js';
export { createRouter, type Router } from './router.js';
export {
  cursorSigner,
  invalidCursor,
  lazyCursorSigner,
  listingOf,
  pageOf,
  readCursor,
  type CursorPartKind,
  type CursorPosition,
  type CursorSigner,
  type CursorToken,
} from './cursor.js';
export * from './webhook-target.js';
