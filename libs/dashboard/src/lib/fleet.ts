// A worker's place in the fleet, from what the API tells: its record's status (Active or
// Stopped), its last heartbeat, and its newest lifecycle event in the activity feed.
import type { FleetEvent, WorkerSummary } from '../api/types';

export type FleetStatus = 'Online' | 'Draining' | 'Offline';

/** Heartbeats come every 30 s by default (WORKER_HEARTBEAT_INTERVAL); three missed ones is gone. */
export const STALE_AFTER_MS = 90_000;

const LIFECYCLE = new Set(['started', 'stopping', 'stopped']);

/** The newest started/stopping/stopped event per worker, from a newest-first feed. */
export function latestLifecycle(events: readonly FleetEvent[]): Map<string, FleetEvent['kind']> {
  const out = new Map<string, FleetEvent['kind']>();
  for (const event of events) {
    if (LIFECYCLE.has(event.kind) && !out.has(event.workerId)) out.set(event.workerId, event.kind);
  }
  return out;
}

export function fleetStatus(
  worker: Pick<WorkerSummary, 'status' | 'lastHeartbeatAt' | 'createdAt'>,
  lifecycle: FleetEvent['kind'] | undefined,
  now: number,
  staleAfterMs = STALE_AFTER_MS,
): FleetStatus {
  if (worker.status === 'Stopped' || lifecycle === 'stopped') return 'Offline';
  const seen = Date.parse(worker.lastHeartbeatAt ?? worker.createdAt);
  if (Number.isNaN(seen) || now - seen > staleAfterMs) return 'Offline';
  return lifecycle === 'stopping' ? 'Draining' : 'Online';
}
