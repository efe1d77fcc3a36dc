import { Router as KoaRouter } from '@koa/router';
import type { AppState } from './app.js';

/** The one router type of the product: koa's router over the shared request state. */
export type Router = KoaRouter<AppState>;

export function createRouter(): Router {
  return new KoaRouter<AppState>();
}
