import { createRouter, type Router } from './router.js';
import { sendJson } from './respond.js';

export type ReadinessCheck = () => Promise<unknown>;

/** GET /healthz: the process is up. GET /readyz: every dependency answers (503 otherwise). */
export function healthRouter(checks: Record<string, ReadinessCheck>, timeoutMs = 2000): Router {
  const router = createRouter();
  router.get('/healthz', (ctx) => sendJson(ctx, 200, { status: 'ok' }));
  router.get('/readyz', async (ctx) => {
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
    const ready = results.every(([, state]) => state === 'ok');
    sendJson(ctx, ready ? 200 : 503, { status: ready ? 'ready' : 'not_ready', checks: Object.fromEntries(results) });
  });
  return router;
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
