import type { Middleware } from 'koa';
import {
  RateLimited,
  fullBucket,
  isBucketFull,
  takeToken,
  type TokenBucket,
  type TokenBucketLimits,
} from '@po/domain';
import type { AppState } from '@po/http';

/**
 * The rate limit of the anonymous POST /logs (decision 0083): a token bucket per client address,
 * in this process. It runs before the body is read, so a refused request costs a map lookup.
 */

/** Client addresses remembered at once: about 100 bytes each, so a few MB at most. */
export const MAX_TRACKED_CLIENTS = 50_000;

/**
 * Buckets by client, least recently used first (a Map keeps insertion order and each use
 * re-inserts). A bucket that has refilled to its burst is the same as no bucket, so idle clients
 * are dropped from the front as requests come; past MAX_TRACKED_CLIENTS the least recently used
 * goes too, so memory is bounded however many addresses send.
 */
export class ClientBuckets {
  private readonly buckets = new Map<string, TokenBucket>();

  constructor(
    private readonly limits: TokenBucketLimits,
    private readonly maxClients = MAX_TRACKED_CLIENTS,
  ) {}

  /** Takes a token for `client`: null when the request may pass, else the seconds to wait. */
  take(client: string, nowMs: number): number | null {
    const result = takeToken(
      this.buckets.get(client) ?? fullBucket(this.limits, nowMs),
      this.limits,
      nowMs,
    );
    this.buckets.delete(client);
    this.buckets.set(client, result.bucket);
    this.evict(nowMs);
    return result.allowed ? null : result.retryAfterSeconds;
  }

  get size(): number {
    return this.buckets.size;
  }

  private evict(nowMs: number): void {
    for (const [client, bucket] of this.buckets) {
      if (this.buckets.size <= this.maxClients && !isBucketFull(bucket, this.limits, nowMs)) return;
      this.buckets.delete(client);
    }
  }
}

/**
 * The client a request is counted for. Behind the Ingress (app.proxy) that is the last
 * X-Forwarded-For entry, the one the nearest proxy appended; the first entries come from the
 * client itself and would let it pick a fresh address per request. IPv6 clients are counted per
 * /64, the smallest block one subscriber usually gets: one host holds a whole /64.
 */
export function clientKey(forwarded: readonly string[], socketAddress: string): string {
  const address = (forwarded.at(-1) ?? socketAddress).trim();
  const v4mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (v4mapped) return v4mapped[1]!;
  if (!address.includes(':')) return address;
  return `${ipv6Groups(address.replace(/%.*$/, '')).slice(0, 4).join(':')}::/64`;
}

/** The eight 16-bit groups of an IPv6 address (`::` expanded, leading zeros dropped, lower case). */
function ipv6Groups(address: string): string[] {
  const [head = '', tail] = address.toLowerCase().split('::', 2);
  const split = (part: string) => (part === '' ? [] : part.split(':'));
  const left = split(head);
  const right = tail === undefined ? [] : split(tail);
  const zeros = Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0');
  return [...left, ...zeros, ...right].map((g) =>
    /^[0-9a-f]{1,4}$/.test(g) ? g.replace(/^0+(?=.)/, '') : g,
  );
}

/** POST /logs middleware: 429 `rate_limited` with Retry-After once a client's bucket is empty. */
export function logsRateLimit(limits: TokenBucketLimits, clock: () => Date): Middleware<AppState> {
  if (limits.ratePerMinute === 0) return (_ctx, next) => next();
  const buckets = new ClientBuckets(limits);
  return async (ctx, next) => {
    const wait = buckets.take(
      clientKey(ctx.ips, ctx.socket.remoteAddress ?? ''),
      clock().getTime(),
    );
    if (wait !== null)
      throw new RateLimited(
        `Too many log lines from this client address; retry in ${wait} s.`,
        wait,
      );
    await next();
  };
}
