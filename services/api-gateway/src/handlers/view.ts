import { formatNullableDateTime, type HandlerView } from '@po/contracts';
import type { HandlerRecord } from '@po/db';

/** The API's view of a handler (decision 0132). */
export function handlerView(h: HandlerRecord): HandlerView {
  return {
    name: h.name,
    paused: h.paused,
    maxConcurrent: h.maxConcurrent,
    maxPerSecond: h.maxPerSecond,
    configured: h.configured,
    backlog: h.throttled + h.pending,
    throttled: h.throttled,
    pending: h.pending,
    running: h.running,
    oldestWaitingSeconds: h.oldestWaitingSeconds,
    updatedAt: formatNullableDateTime(h.updatedAt),
  };
}
