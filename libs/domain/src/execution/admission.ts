import type { StageStatus } from '../statuses.js';
import { refillBucket, type TokenBucket } from '../token-bucket.js';
import { slotOrder } from './pass.js';
import { slotTarget } from './transitions.js';

/**
 * Flow control at dispatch (decision 0132): which ready stages of one application become Pending
 * now, and which wait as Throttled. Pure: the engine reads the counts under the application's
 * advisory lock and passes them in.
 */

export interface AdmissionCandidate {
  id: number;
  /** NotStarted, Throttled or a due RetryScheduled. */
  status: StageStatus;
  handler: string;
  /** null: the stage is a key of its own (load 0, no limit). */
  key: string | null;
  /** The stage's concurrencyLimit (1 when a key has none); ignored without a key. */
  keyLimit: number | null;
  /** 1..5, lower first. */
  priority: number;
}

export interface HandlerGate {
  paused: boolean;
  /** maxConcurrent minus the handler's Pending + Running stages; null: no limit. */
  free: number | null;
  /** Whole dispatches the maxPerSecond bucket allows now; null: no rate limit. */
  tokens: number | null;
}

export interface AdmissionGates {
  /** APP_MAX_ACTIVE_STAGES room; null: no cap. */
  appFree: number | null;
  /** Handlers without an entry have no settings: not paused, no limits. */
  handlers: ReadonlyMap<string, HandlerGate>;
  /** Pending + Running stages of each key (a key absent counts 0). */
  keyLoad: ReadonlyMap<string, number>;
}

export interface Admission {
  dispatch: number[];
  /** Candidates that wait: those not Throttled yet become Throttled (sorted by id). */
  throttle: number[];
  /** Each dispatched stage's turn: its key's load when it was admitted (0 without a key). */
  turns: Map<number, number>;
  /** Dispatches taken from each rate-limited handler's bucket. */
  tokensTaken: Map<string, number>;
  /** Handlers whose rate limit held a candidate back. */
  rateBlocked: Set<string>;
}

/**
 * Picks greedily: among the candidates whose gates have room, the lowest priority number, then
 * the key with the least load (its Pending + Running stages plus what this call admitted: keys
 * take turns, max-min fair), then slotOrder (Throttled first, oldest first). A candidate held back
 * by its own key's limit or its handler's gates holds back no one else; the application cap stops
 * the whole pick.
 */
export function admitStages(candidates: readonly AdmissionCandidate[], gates: AdmissionGates): Admission {
  const load = new Map(gates.keyLoad);
  const handlers = new Map([...gates.handlers].map(([name, g]) => [name, { ...g }]));
  let appFree = gates.appFree;
  const out: Admission = { dispatch: [], throttle: [], turns: new Map(), tokensTaken: new Map(), rateBlocked: new Set() };

  // Each key's candidates in the order the key serves them; a stage without a key is a queue of one.
  const queues: AdmissionCandidate[][] = [];
  const byKey = new Map<string, AdmissionCandidate[]>();
  for (const c of candidates) {
    if (c.key === null) queues.push([c]);
    else {
      let q = byKey.get(c.key);
      if (!q) byKey.set(c.key, (q = []));
      q.push(c);
    }
  }
  for (const q of byKey.values()) queues.push(q.sort(withinKey));

  const heads = queues.map(() => 0);
  for (;;) {
    if (appFree !== null && appFree <= 0) break;
    let best = -1;
    for (let i = 0; i < queues.length; i += 1) {
      const c = queues[i]![heads[i]!];
      if (!c) continue;
      if (best < 0 || before(c, queues[best]![heads[best]!]!, load) < 0) best = i;
    }
    if (best < 0) break;
    const c = queues[best]![heads[best]!]!;
    heads[best] = heads[best]! + 1;
    const keyLoad = c.key === null ? 0 : (load.get(c.key) ?? 0);
    if (c.key !== null && keyLoad >= (c.keyLimit ?? 1)) {
      // The key is at its limit: the rest of its queue waits too.
      heads[best] = queues[best]!.length;
      continue;
    }
    const gate = handlers.get(c.handler);
    if (gate && (gate.paused || (gate.free !== null && gate.free <= 0) || (gate.tokens !== null && gate.tokens < 1))) {
      if (gate.tokens !== null && gate.tokens < 1 && !gate.paused) out.rateBlocked.add(c.handler);
      continue;
    }
    out.dispatch.push(c.id);
    out.turns.set(c.id, keyLoad);
    if (c.key !== null) load.set(c.key, keyLoad + 1);
    if (appFree !== null) appFree -= 1;
    if (gate?.free != null) gate.free -= 1;
    if (gate?.tokens != null) {
      gate.tokens -= 1;
      out.tokensTaken.set(c.handler, (out.tokensTaken.get(c.handler) ?? 0) + 1);
    }
  }
  const admitted = new Set(out.dispatch);
  out.throttle = candidates
    .filter((c) => !admitted.has(c.id) && slotTarget(c.status, false) !== null)
    .map((c) => c.id)
    .sort((a, b) => a - b);
  return out;
}

/** Inside one key: priority, then slotOrder. */
function withinKey(a: AdmissionCandidate, b: AdmissionCandidate): number {
  return a.priority - b.priority || slotOrder(a, b);
}

/** Across keys: priority, then the key's load (fair turns), then slotOrder. */
function before(a: AdmissionCandidate, b: AdmissionCandidate, load: ReadonlyMap<string, number>): number {
  const loadOf = (c: AdmissionCandidate) => (c.key === null ? 0 : (load.get(c.key) ?? 0));
  return a.priority - b.priority || loadOf(a) - loadOf(b) || slotOrder(a, b);
}

/** maxPerSecond as a bucket: one second of burst (at least one dispatch), refilled continuously. */
export function dispatchBucket(maxPerSecond: number, stored: TokenBucket | null, nowMs: number): TokenBucket {
  const limits = { ratePerMinute: maxPerSecond * 60, burst: Math.max(1, maxPerSecond) };
  // A bucket never used (or whose rate just changed) starts full, as BullMQ's limiter does.
  return refillBucket(stored ?? { tokens: limits.burst, at: nowMs }, limits, nowMs);
}

/** When the bucket holds a whole token again (ms since the epoch). */
export function nextTokenAt(maxPerSecond: number, bucket: TokenBucket): number {
  return bucket.at + Math.max(0, Math.ceil(((1 - bucket.tokens) * 1000) / maxPerSecond));
}
