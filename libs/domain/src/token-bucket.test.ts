import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  fullBucket,
  isBucketFull,
  refillBucket,
  takeToken,
  type TokenBucket,
  type TokenBucketLimits,
} from './token-bucket.js';

const limits: TokenBucketLimits = { ratePerMinute: 600, burst: 100 };

/** Takes `n` tokens at one instant; returns the last result. */
function takeMany(bucket: TokenBucket, n: number, at: number, within: TokenBucketLimits = limits) {
  let result = takeToken(bucket, within, at);
  for (let i = 1; i < n; i++) result = takeToken(result.bucket, within, at);
  return result;
}

describe('token bucket (POST /logs rate limit)', () => {
  it('lets `burst` requests through at once and refuses the next with a Retry-After of at least 1 s', () => {
    const start = fullBucket(limits, 0);
    const last = takeMany(start, 100, 0);
    expect(last.allowed).toBe(true);
    const refused = takeToken(last.bucket, limits, 0);
    expect(refused).toMatchObject({ allowed: false, retryAfterSeconds: 1 });
  });

  it('refills at the rate: 600 a minute is one token every 100 ms', () => {
    const empty = takeMany(fullBucket(limits, 0), 100, 0).bucket;
    expect(takeToken(empty, limits, 99).allowed).toBe(false);
    expect(takeToken(empty, limits, 100).allowed).toBe(true);
    expect(refillBucket(empty, limits, 1_000).tokens).toBeCloseTo(10);
  });

  it('never holds more than the burst, however long it was idle', () => {
    expect(refillBucket({ tokens: 3, at: 0 }, limits, 10 * 60_000).tokens).toBe(100);
    expect(isBucketFull({ tokens: 0, at: 0 }, limits, 9_999)).toBe(false);
    expect(isBucketFull({ tokens: 0, at: 0 }, limits, 10_000)).toBe(true);
  });

  it('Retry-After is the whole seconds until the next token: 6 a minute waits 10 s', () => {
    const slow = { ratePerMinute: 6, burst: 1 };
    const used = takeToken(fullBucket(slow, 0), slow, 0);
    expect(takeToken(used.bucket, slow, 0)).toMatchObject({
      allowed: false,
      retryAfterSeconds: 10,
    });
    expect(takeToken(used.bucket, slow, 9_500)).toMatchObject({
      allowed: false,
      retryAfterSeconds: 1,
    });
    expect(takeToken(used.bucket, slow, 10_000).allowed).toBe(true);
  });

  it('a clock that moves backwards adds no tokens', () => {
    const empty = takeMany(fullBucket(limits, 5_000), 100, 5_000).bucket;
    expect(takeToken(empty, limits, 0).allowed).toBe(false);
    expect(refillBucket(empty, limits, 0)).toEqual(empty);
  });

  it('rate 0 turns the limit off', () => {
    const off = { ratePerMinute: 0, burst: 1 };
    const bucket = takeMany(fullBucket(off, 0), 1000, 0, off);
    expect(bucket.allowed).toBe(true);
  });

  it('over any sequence of requests, no more pass than burst + rate × elapsed', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 2_000 }), { minLength: 1, maxLength: 400 }),
        (gaps) => {
          let bucket = fullBucket(limits, 0);
          let now = 0;
          let passed = 0;
          for (const gap of gaps) {
            now += gap;
            const r = takeToken(bucket, limits, now);
            bucket = r.bucket;
            if (r.allowed) passed += 1;
          }
          expect(passed).toBeLessThanOrEqual(
            limits.burst + Math.floor((now * limits.ratePerMinute) / 60_000),
          );
        },
      ),
    );
  });
});
