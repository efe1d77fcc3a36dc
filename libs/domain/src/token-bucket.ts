/**
 * A token bucket (decision 0083): `burst` requests at once, refilled at `ratePerMinute`. Pure: the
 * caller keeps the state and passes the time, so the math is tested without clocks.
 */

export interface TokenBucketLimits {
  /** Tokens added per minute; 0 turns the limit off. */
  ratePerMinute: number;
  /** Capacity: how many requests may arrive at once after a quiet spell. */
  burst: number;
}

export interface TokenBucket {
  tokens: number;
  /** When `tokens` was last brought up to date (ms since the epoch). */
  at: number;
}

export type TakeResult =
  | { allowed: true; bucket: TokenBucket }
  | { allowed: false; bucket: TokenBucket; retryAfterSeconds: number };

/** A bucket that has not been used yet: full. */
export const fullBucket = (limits: TokenBucketLimits, nowMs: number): TokenBucket => ({
  tokens: limits.burst,
  at: nowMs,
});

/** The bucket brought up to `nowMs`. A clock that went backwards adds nothing (and takes nothing). */
export function refillBucket(
  bucket: TokenBucket,
  limits: TokenBucketLimits,
  nowMs: number,
): TokenBucket {
  const elapsed = Math.max(0, nowMs - bucket.at);
  const tokens = Math.min(limits.burst, bucket.tokens + (elapsed * limits.ratePerMinute) / 60_000);
  return { tokens, at: Math.max(bucket.at, nowMs) };
}

/**
 * Takes one token. When none is left, says how many whole seconds until one will be (at least 1,
 * the smallest Retry-After there is).
 */
export function takeToken(
  bucket: TokenBucket,
  limits: TokenBucketLimits,
  nowMs: number,
): TakeResult {
  if (limits.ratePerMinute === 0) return { allowed: true, bucket };
  const current = refillBucket(bucket, limits, nowMs);
  if (current.tokens >= 1)
    return { allowed: true, bucket: { tokens: current.tokens - 1, at: current.at } };
  const missing = 1 - current.tokens;
  const retryAfterSeconds = Math.max(1, Math.ceil((missing * 60) / limits.ratePerMinute));
  return { allowed: false, bucket: current, retryAfterSeconds };
}

/** True when the bucket has refilled to its burst by `nowMs`: forgetting it changes nothing. */
export function isBucketFull(
  bucket: TokenBucket,
  limits: TokenBucketLimits,
  nowMs: number,
): boolean {
  return refillBucket(bucket, limits, nowMs).tokens >= limits.burst;
}
