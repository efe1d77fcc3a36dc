import type { Middleware } from 'koa';
import { metricsText } from '@po/telemetry';
import type { AppState } from './app.js';

/**
 * GET /metrics on every service: this process's Prometheus metrics (text exposition format 0.0.4).
 * An operational endpoint beside the routers, not an operation of the product API, so it is not
 * in the OpenAPI document (decision 0052); restrict it at the ingress where the API is public.
 */
export const metricsEndpoint: Middleware<AppState> = async (ctx, next) => {
  if (ctx.path !== '/metrics' || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) return next();
  (ctx as { _matchedRoute?: string })._matchedRoute = '/metrics';
  const { contentType, body } = await metricsText();
  ctx.status = 200;
  ctx.set('Content-Type', contentType);
  ctx.body = body;
};
