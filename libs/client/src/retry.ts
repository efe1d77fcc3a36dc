// Retries of 429 and 503 answers, honouring Retry-After, for requests that are safe to repeat.
import { ConnectionError } from './errors.js';

export interface RetryOptions {
  /** Tries in all, the first included (default 3); 1 turns retries off. */
  attempts: number;
  /** Without Retry-After, the n-th retry waits baseDelayMs × 2^(n-1) (default 500). */
  baseDelayMs: number;
  /** The longest wait honoured (default 30000): an answer asking for more is returned as it is. */
  maxDelayMs: number;
  /** Statuses that are retried (default 429 and 503). */
  statuses: readonly number[];
}

export const DEFAULT_RETRY: RetryOptions = {
  attempts: 3,
  baseDelayMs: 500,
  maxDelayMs: 30_000,
  statuses: [429, 503],
};

export type FetchLike = (request: Request) => Promise<Response>;
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/**
 * POSTs whose repetition cannot create twice: idempotent creation (the key is in the body,
 * api-spec.md), the lookup by key, and a backfill (one run per tick at most).
 */
const REPEATABLE_POSTS = [
  /\/pipelines\/idempotent$/,
  /\/pipelines\/by-idempotency-key$/,
  /\/schedules\/[^/]+\/backfill$/,
];

/**
 * Whether a request may be sent again after a 429 or 503: methods that are idempotent by
 * definition, idempotent creation and lookup of pipelines, and backfills. Never a cancel, an
 * append, a rerun, a trigger or a legacy creation.
 */
export function isRepeatable(method: string, pathname: string): boolean {
  const m = method.toUpperCase();
  if (m === 'GET' || m === 'HEAD' || m === 'PUT' || m === 'DELETE' || m === 'OPTIONS') return true;
  return m === 'POST' && REPEATABLE_POSTS.some((re) => re.test(pathname.replace(/\/+$/, '')));
}

/**
 * Retry-After as milliseconds from `now`: delay-seconds or an HTTP-date (RFC 9110 §10.2.3).
 * Undefined when absent or unreadable; a date in the past is 0.
 */
export function parseRetryAfter(value: string | null | undefined, now: number): number | undefined {
  if (value === null || value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  if (!/[a-z]/i.test(text)) return undefined; // "1.5", "-1": not a date either
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

/**
 * How long to wait before try `attempt + 1`, or undefined to give up and return the answer:
 * Retry-After when present, else exponential backoff; never longer than maxDelayMs.
 */
export function retryDelay(
  retryAfter: string | null,
  attempt: number,
  options: RetryOptions,
  now: number,
): number | undefined {
  if (attempt >= options.attempts) return undefined;
  const asked = parseRetryAfter(retryAfter, now);
  if (asked !== undefined) return asked <= options.maxDelayMs ? asked : undefined;
  return Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** (attempt - 1));
}

export const sleep: Sleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/** Where a request went, without its query string (which may carry a cursor or filters). */
function describe(request: Request): string {
  const url = new URL(request.url);
  return `${request.method} ${url.origin}${url.pathname}`;
}

/**
 * Wraps `fetchImpl`: network failures become ConnectionError, and repeatable requests answered
 * 429/503 are sent again after the delay the answer asks for.
 */
export function withRetries(
  fetchImpl: FetchLike,
  options: RetryOptions,
  wait: Sleep = sleep,
  now: () => number = Date.now,
): FetchLike {
  const send = async (request: Request): Promise<Response> => {
    try {
      return await fetchImpl(request);
    } catch (err) {
      throw new ConnectionError(describe(request), { cause: err });
    }
  };
  return async (request) => {
    if (options.attempts <= 1 || !isRepeatable(request.method, new URL(request.url).pathname)) {
      return send(request);
    }
    for (let attempt = 1; ; attempt += 1) {
      // A body can be read once: every try but the last sends a copy.
      const response = await send(attempt < options.attempts ? request.clone() : request);
      if (!options.statuses.includes(response.status)) return response;
      const delay = retryDelay(response.headers.get('retry-after'), attempt, options, now());
      if (delay === undefined) return response;
      await response.body?.cancel();
      await wait(delay, request.signal);
    }
  };
}
