// The conditional-GET cache. The API answers every JSON GET with a strong ETag and honours
// If-None-Match with 304, but sends Cache-Control: no-store so the browser's cache never holds
// tenant data; the app therefore keeps the last body and ETag per URL itself, in memory only.

export interface CachedBody {
  etag: string;
  body: unknown;
}

/** A bounded least-recently-used map from request URL to the last 200 answer's ETag and body. */
export class EtagCache {
  readonly #entries = new Map<string, CachedBody>();

  constructor(readonly maxEntries = 200) {}

  get(url: string): CachedBody | undefined {
    const entry = this.#entries.get(url);
    if (entry) {
      // re-insert so the Map's iteration order is least-recently-used first
      this.#entries.delete(url);
      this.#entries.set(url, entry);
    }
    return entry;
  }

  set(url: string, etag: string, body: unknown): void {
    this.#entries.delete(url);
    this.#entries.set(url, { etag, body });
    while (this.#entries.size > this.maxEntries) {
      const oldest = this.#entries.keys().next().value;
      if (oldest === undefined) break;
      this.#entries.delete(oldest);
    }
  }

  delete(url: string): void {
    this.#entries.delete(url);
  }

  /** On sign-out: nothing of one key's data may outlive it. */
  clear(): void {
    this.#entries.clear();
  }

  get size(): number {
    return this.#entries.size;
  }
}

export type Fetch = (url: string, init: RequestInit) => Promise<Response>;

/** A 2xx/304 answer's outcome: the body (fresh or reused) and whether it came from the cache. */
export interface ConditionalResult {
  status: number;
  body: unknown;
  fromCache: boolean;
}

/**
 * GET `url` with If-None-Match when a body is cached. A 304 reuses the cached body (the same
 * object, so TanStack Query's structural sharing sees no change). A 304 without a cached body (the
 * entry was evicted in between) is retried once unconditionally. Answers other than 2xx/304 are
 * returned to the caller as the Response, unread.
 */
export async function conditionalGet(
  fetchFn: Fetch,
  cache: EtagCache,
  url: string,
  init: RequestInit & { headers: Record<string, string> },
): Promise<ConditionalResult | Response> {
  const cached = cache.get(url);
  const headers = { ...init.headers };
  if (cached) headers['If-None-Match'] = cached.etag;
  let res = await fetchFn(url, { ...init, method: 'GET', headers });
  if (res.status === 304) {
    const again = cache.get(url);
    if (again) return { status: 304, body: again.body, fromCache: true };
    res = await fetchFn(url, { ...init, method: 'GET', headers: init.headers });
  }
  if (!res.ok) return res;
  const body: unknown = res.status === 204 ? null : await res.json();
  const etag = res.headers.get('ETag');
  if (etag) cache.set(url, etag, body);
  else cache.delete(url);
  return { status: res.status, body, fromCache: false };
}
