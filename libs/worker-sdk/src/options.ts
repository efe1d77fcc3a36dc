// createWorker options: their types, defaults and validation (every problem reported at once).
import { WorkerConfigError } from './errors.js';
import type { FetchLike } from './transport.js';
import type { Logger } from './logger.js';
import { LIMITS } from './protocol.js';
import type { JsonObject } from './protocol.js';
import type { StageHandler } from './types.js';

export interface WorkerOptions {
  /** Base URL of the API, for example `http://127.0.0.1:8080` (a path prefix is kept). */
  baseUrl: string;
  /** Base URL of the worker routes (/workers/*, /jobs/*, /stages/*); default `baseUrl`. */
  workerBaseUrl?: string;
  /** The application's API key (sent as X-API-Key). */
  apiKey: string;
  /** Unique per process; a second process with the same id takes over the worker session. */
  instanceId: string;
  /** Handler name → function. Each handler gets the queue `app_{applicationId}_{name}_StageNext`. */
  handlers: Record<string, StageHandler>;
  /** Handler slots; a queue is pulled only when a slot is free. Default 1. */
  concurrency?: number;
  /** Long-poll wait of a pull, 0..20 seconds. Default 20. */
  waitSeconds?: number;
  /** Default: JSON lines on stderr, level info. */
  logger?: Logger;
  workerName?: string;
  metadata?: JsonObject;
  /** How long stop() lets running handlers finish before aborting them. Default 30000. */
  drainTimeoutMs?: number;
  /** After that abort, how long stop() waits for results and acks. Default 5000. */
  abortGraceMs?: number;
  /** Timeout of each HTTP call (a pull adds its wait). Default 10000. */
  requestTimeoutMs?: number;
  /** Lease renewal period while a stage runs and its result is sent. Default 20000. */
  leaseRenewIntervalMs?: number;
  /**
   * How long a lease lasts, counted on the SDK's clock from when the request that got it was sent:
   * once it passes without a renewal, ctx.signal aborts. The protocol grants 60 s; a lower value
   * only aborts sooner. Default 60000.
   */
  leaseDurationMs?: number;
  /** Heartbeat period; default the bootstrap's heartbeatIntervalSeconds. */
  heartbeatIntervalMs?: number;
  /** How often buffered lifecycle events are sent. Default 1000. */
  eventFlushIntervalMs?: number;
  /** Send lifecycle events (POST /workers/events). Default true. */
  sendEvents?: boolean;
  /** First retry delay of a failed call (doubles up to retryMaxDelayMs). Default 500. */
  retryBaseDelayMs?: number;
  /** Default 30000. */
  retryMaxDelayMs?: number;
  /** How long a result is re-sent after unknown outcomes before giving up. Default 300000. */
  resultRetryTimeoutMs?: number;
  /** Attempts at bootstrap on network errors and 5xx before start() rejects. Default 5. */
  startupAttempts?: number;
  /** A fetch-like transport (proxies, tests); the global `fetch` is one. Default: node:http with keep-alive. */
  fetch?: FetchLike;
}

export interface ResolvedOptions {
  baseUrl: string;
  workerBaseUrl: string;
  apiKey: string;
  instanceId: string;
  handlers: ReadonlyMap<string, StageHandler>;
  concurrency: number;
  waitSeconds: number;
  logger: Logger | undefined;
  workerName: string | undefined;
  metadata: JsonObject | undefined;
  drainTimeoutMs: number;
  abortGraceMs: number;
  requestTimeoutMs: number;
  leaseRenewIntervalMs: number;
  leaseDurationMs: number;
  heartbeatIntervalMs: number | undefined;
  eventFlushIntervalMs: number;
  sendEvents: boolean;
  retryBaseDelayMs: number;
  retryMaxDelayMs: number;
  resultRetryTimeoutMs: number;
  startupAttempts: number;
  fetch: FetchLike | undefined;
}

type Problems = string[];

function url(value: unknown, name: string, problems: Problems): string {
  if (typeof value !== 'string' || value.trim() === '') {
    problems.push(`${name} is required: the API base URL, for example http://127.0.0.1:8080`);
    return '';
  }
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    problems.push(`${name} is not a valid URL`);
    return '';
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    problems.push(`${name} must use http or https, got ${parsed.protocol}`);
  }
  if (parsed.search !== '' || parsed.hash !== '') {
    problems.push(`${name} must not carry a query or fragment`);
  }
  return value.trim().replace(/\/+$/, '');
}

function int(
  value: unknown,
  name: string,
  min: number,
  max: number,
  fallback: number,
  problems: Problems,
): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    problems.push(`${name} must be an integer ${min}..${max}, got ${JSON.stringify(value)}`);
    return fallback;
  }
  return value;
}

function text(value: unknown, name: string, max: number, problems: Problems): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length > max) {
    problems.push(`${name} must be a string of at most ${max} characters`);
    return undefined;
  }
  return value;
}

function handlersOf(value: unknown, problems: Problems): Map<string, StageHandler> {
  const map = new Map<string, StageHandler>();
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    problems.push('handlers is required: an object of handler name → async function');
    return map;
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) problems.push('handlers must name at least one handler');
  if (entries.length > LIMITS.handlers) {
    problems.push(`handlers may name at most ${LIMITS.handlers} handlers, got ${entries.length}`);
  }
  for (const [name, fn] of entries) {
    if (name.length === 0 || Array.from(name).length > LIMITS.handlerNameChars) {
      problems.push(`handler name "${name}" must be 1..${LIMITS.handlerNameChars} characters`);
    } else if (typeof fn !== 'function') {
      problems.push(`handlers["${name}"] must be a function, got ${typeof fn}`);
    } else {
      map.set(name, fn as StageHandler);
    }
  }
  return map;
}

const MAX_MS = 2_147_483_647;
/** The lease the protocol grants, and extends by on a renewal. */
const LEASE_MS = 60_000;

/** Validates options and applies defaults; throws WorkerConfigError listing every problem. */
export function resolveOptions(options: WorkerOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null) {
    throw new WorkerConfigError(['createWorker needs an options object']);
  }
  const o = options as Partial<Record<keyof WorkerOptions, unknown>>;
  const p: Problems = [];
  const baseUrl = url(o.baseUrl, 'baseUrl', p);
  const workerBaseUrl =
    o.workerBaseUrl === undefined ? baseUrl : url(o.workerBaseUrl, 'workerBaseUrl', p);
  if (typeof o.apiKey !== 'string' || o.apiKey.trim() === '') {
    p.push('apiKey is required (the application API key; did you set PO_API_KEY?)');
  }
  if (
    typeof o.instanceId !== 'string' ||
    o.instanceId.length === 0 ||
    Array.from(o.instanceId).length > LIMITS.instanceIdChars
  ) {
    p.push(`instanceId is required: 1..${LIMITS.instanceIdChars} characters, unique per process`);
  }
  const handlers = handlersOf(o.handlers, p);
  const ms = (key: keyof WorkerOptions, min: number, fallback: number) =>
    int(o[key], key, min, MAX_MS, fallback, p);
  const logger = o.logger as Logger | undefined;
  if (
    logger !== undefined &&
    (typeof logger !== 'object' ||
      logger === null ||
      ['info', 'warn', 'error'].some(
        (m) => typeof (logger as unknown as JsonObject)[m] !== 'function',
      ))
  ) {
    p.push('logger must have info, warn and error functions');
  }
  if (o.metadata !== undefined && (typeof o.metadata !== 'object' || o.metadata === null)) {
    p.push('metadata must be an object');
  }
  if (o.sendEvents !== undefined && typeof o.sendEvents !== 'boolean') {
    p.push('sendEvents must be a boolean');
  }
  if (o.fetch !== undefined && typeof o.fetch !== 'function') p.push('fetch must be a function');
  const resolved: ResolvedOptions = {
    baseUrl,
    workerBaseUrl,
    apiKey: typeof o.apiKey === 'string' ? o.apiKey : '',
    instanceId: typeof o.instanceId === 'string' ? o.instanceId : '',
    handlers,
    concurrency: int(o.concurrency, 'concurrency', 1, 1000, 1, p),
    waitSeconds: int(o.waitSeconds, 'waitSeconds', 0, LIMITS.waitSecondsMax, 20, p),
    logger,
    workerName: text(o.workerName, 'workerName', LIMITS.workerNameChars, p),
    metadata: o.metadata as JsonObject | undefined,
    drainTimeoutMs: ms('drainTimeoutMs', 0, 30_000),
    abortGraceMs: ms('abortGraceMs', 0, 5_000),
    requestTimeoutMs: ms('requestTimeoutMs', 1, 10_000),
    leaseRenewIntervalMs: ms('leaseRenewIntervalMs', 1, 20_000),
    leaseDurationMs: int(o.leaseDurationMs, 'leaseDurationMs', 2, LEASE_MS, LEASE_MS, p),
    heartbeatIntervalMs:
      o.heartbeatIntervalMs === undefined ? undefined : ms('heartbeatIntervalMs', 1, 30_000),
    eventFlushIntervalMs: ms('eventFlushIntervalMs', 1, 1_000),
    sendEvents: o.sendEvents !== false,
    retryBaseDelayMs: ms('retryBaseDelayMs', 1, 500),
    retryMaxDelayMs: ms('retryMaxDelayMs', 1, 30_000),
    resultRetryTimeoutMs: ms('resultRetryTimeoutMs', 0, 300_000),
    startupAttempts: int(o.startupAttempts, 'startupAttempts', 1, 1000, 5, p),
    fetch: o.fetch as FetchLike | undefined,
  };
  if (resolved.leaseRenewIntervalMs >= resolved.leaseDurationMs) {
    p.push(
      `leaseRenewIntervalMs must be below leaseDurationMs (${resolved.leaseDurationMs}): a lease must be renewed before it runs out`,
    );
  }
  if (p.length > 0) throw new WorkerConfigError(p);
  return resolved;
}
