/** Jitter (addendum §14.4): a deterministic offset per schedule and tick. */
import { createHash } from 'node:crypto';
import { limits } from '@po/contracts';

/** Largest accepted jitterSeconds (api-spec Limits). */
export const JITTER_SECONDS_MAX: number = limits.jitterSecondsMax;

/**
 * `u64be(first 8 bytes of SHA-256("{scheduleId}:{tick as ISO UTC ms}")) mod (jitterSeconds·1000 + 1)`,
 * in milliseconds, so 0..jitterSeconds·1000. The tick fires at `tick + offset`.
 */
export function jitterOffsetMs(scheduleId: number, tick: Date, jitterSeconds: number): number {
  const span = BigInt(Math.max(0, Math.floor(jitterSeconds))) * 1000n + 1n;
  if (span === 1n) return 0;
  const digest = createHash('sha256')
    .update(`${scheduleId}:${tick.toISOString()}`, 'utf8')
    .digest();
  return Number(digest.readBigUInt64BE(0) % span);
}

/** The last instant a request may name (years 1 to 9999), which PostgreSQL stores and reads back. */
const LAST_FIRE_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/**
 * The fire time of `tick`: the tick plus its jitter offset, but never past 9999-12-31T23:59:59.999Z
 * (a Once runAt at the very end of the range would otherwise be jittered into year 10000).
 */
export function jitteredFireAt(scheduleId: number, tick: Date, jitterSeconds: number): Date {
  return new Date(Math.min(tick.getTime() + jitterOffsetMs(scheduleId, tick, jitterSeconds), Math.max(tick.getTime(), LAST_FIRE_MS)));
}
