/**
 * What a worker-gateway process may hold for pulls (addendum §15, decision 0081): deliveries in
 * flight per process and per application, pulls waiting per application, and the approximate bytes
 * of the messages held.
 */
export interface DeliveryLimits {
  maxInflight: number;
  maxInflightPerApp: number;
  maxWaitingPerApp: number;
  maxInflightBytes: number;
}

/** What the process holds now, seen from one application. In flight counts fetches under way too. */
export interface DeliveryLoad {
  inflight: number;
  inflightBytes: number;
  appInflight: number;
  appWaiting: number;
}

export type PullRefusal = 'process_inflight' | 'process_bytes' | 'app_inflight' | 'app_waiting';

/** Why a new pull gets 429 before it waits at all, or null when it may wait. */
export function pullRefusal(load: DeliveryLoad, limits: DeliveryLimits): PullRefusal | null {
  if (load.inflight >= limits.maxInflight) return 'process_inflight';
  // Held bytes only: a message bigger than the bound still goes out when nothing else is held.
  if (load.inflightBytes >= limits.maxInflightBytes) return 'process_bytes';
  if (load.appInflight >= limits.maxInflightPerApp) return 'app_inflight';
  if (load.appWaiting >= limits.maxWaitingPerApp) return 'app_waiting';
  return null;
}

/**
 * How many messages one application's queue may fetch at once for `wanted` waiting pulls. Sizes
 * are known only after a fetch, so the room left in bytes is divided by the size of the queue's
 * recent messages; one is always allowed while any byte room is left.
 */
export function fetchRoom(load: Omit<DeliveryLoad, 'appWaiting'>, limits: DeliveryLimits, wanted: number, typicalBytes: number): number {
  const bytesLeft = limits.maxInflightBytes - load.inflightBytes;
  const byBytes = bytesLeft <= 0 ? 0 : Math.max(1, Math.floor(bytesLeft / Math.max(1, typicalBytes)));
  return Math.max(0, Math.min(wanted, limits.maxInflight - load.inflight, limits.maxInflightPerApp - load.appInflight, byBytes));
}
