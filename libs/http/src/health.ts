import { createRouter, type Router } from './router.js';
import { sendJson } from './respond.js';

export type ReadinessCheck = () => Promise<unknown>;

export interface HealthOptions {
  /** A check that has not answered after this long counts as unavailable. */
  timeoutMs?: number;
  /**
   * How long one readiness result is served again. `/readyz` is reachable without credentials
   * through the public Ingress: with the cache, any number of callers cost at most one PostgreSQL
   * and one Redis round trip per this period, and callers that arrive while a check runs wait for
   * that check instead of starting their own.
   */
  cacheMs?: number;
  /**
   * Checks whose failure leaves the process ready, reported `degraded`: dependencies that only some
   * routes need, so that the routes which do not need them stay reachable through a load balancer
   * or Service that follows readiness (decision 0120: the worker-gateway's lease renewals need
   * PostgreSQL only, and must get through while Redis is down).
   */
  degradable?: readonly string[];
  /** Milliseconds now; for tests. */
  now?: () => number;
}

type ReadinessStatus = 'ready' | 'degraded' | 'not_ready';

interface Readiness {
  status: ReadinessStatus;
  checks: Record<string, 'ok' | 'unavailable'>;
}

/**
 * GET /healthz: the process is up. GET /readyz: every dependency answers (200 `ready`); only
 * degradable ones fail (200 `degraded`); a required one fails (503 `not_ready`).
 */
export function healthRouter(checks: Record<string, ReadinessCheck>, options: HealthOptions = {}): Router {
  const { timeoutMs = 2000, cacheMs = 1000, degradable = [], now = Date.now } = options;
  let cached: { result: Readiness; at: number } | undefined;
  let inFlight: Promise<Readiness> | undefined;

  const readiness = (): Promise<Readiness> => {
    if (cached && now() - cached.at < cacheMs) return Promise.resolve(cached.result);
    inFlight ??= checkAll(checks, timeoutMs, new Set(degradable)).then((result) => {
      cached = { result, at: now() };
      inFlight = undefined;
      return result;
    });
    return inFlight;
  };

  const router = createRouter();
  router.get('/healthz', (ctx) => sendJson(ctx, 200, { status: 'ok' }));
  router.get('/readyz', async (ctx) => {
    const { status, checks: states } = await readiness();
    sendJson(ctx, status === 'not_ready' ? 503 : 200, { status, checks: states });
  });
  return router;
}

/** Never rejects: a failing or slow check is reported as unavailable. */
async function checkAll(checks: Record<string, ReadinessCheck>, timeoutMs: number, degradable: ReadonlySet<string>): Promise<Readiness> {
  const results = await Promise.all(
    Object.entries(checks).map(async ([name, check]) => {
      try {
        await withTimeout(check(), timeoutMs);
        return [name, 'ok'] as const;
      } catch {
        return [name, 'unavailable'] as const;
      }
    }),
  );
  const failed = results.filter(([, state]) => state !== 'ok').map(([name]) => name);
  const status: ReadinessStatus = failed.length === 0 ? 'ready' : failed.every((name) => degradable.has(name)) ? 'degraded' : 'not_ready';
  return { status, checks: Object.fromEntries(results) };
}

async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
