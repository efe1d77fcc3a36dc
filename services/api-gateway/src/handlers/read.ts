import type { HandlerList, HandlerView } from '@po/contracts';
import { findHandler, listHandlers } from '@po/db';
import { NotFound } from '@po/domain';
import type { Deps } from '../deps.js';
import { handlerView } from './view.js';

/** GET /handlers: every handler the application has settings, live stages or Active workers for, by name. */
export async function listHandlersOf(deps: Deps, applicationId: number): Promise<HandlerList> {
  return { items: (await listHandlers(deps.sql, applicationId)).map(handlerView) };
}

/** GET /handlers/{name}: 404 when no settings, no live stage and no Active worker name it. */
export async function getHandler(deps: Deps, applicationId: number, name: string): Promise<HandlerView> {
  const handler = await findHandler(deps.sql, applicationId, name);
  if (!handler) throw new NotFound(`Handler "${name}" not found.`);
  return handlerView(handler);
}
