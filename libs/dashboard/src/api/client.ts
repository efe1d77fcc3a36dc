// The dashboard's fetch layer: same-origin calls to the public API with the API key in
// X-API-Key, conditional GETs through the EtagCache, problem+json errors as ApiError, and a 401
// anywhere signs the user out. The key lives in sessionStorage only, never in a URL or a log.
import { conditionalGet, EtagCache, type Fetch } from './conditional-cache';
import { ApiError, NetworkError, toApiError } from './problem';

const KEY_STORAGE = 'po.dashboard.apiKey';

export interface ApiClientOptions {
  fetch?: Fetch;
  storage?: Pick<Storage, 'getItem' | 'setItem' | 'removeItem'>;
}

export class ApiClient {
  readonly cache = new EtagCache();
  readonly #fetch: Fetch;
  readonly #storage: Pick<Storage, 'getItem' | 'setItem' | 'removeItem'>;
  readonly #unauthorized = new Set<() => void>();

  constructor(options: ApiClientOptions = {}) {
    this.#fetch = options.fetch ?? ((url, init) => globalThis.fetch(url, init));
    this.#storage = options.storage ?? globalThis.sessionStorage;
  }

  /** Calls `listener` after a 401 dropped the key (the app shows sign-in again); returns an unsubscribe. */
  onUnauthorized(listener: () => void): () => void {
    this.#unauthorized.add(listener);
    return () => {
      this.#unauthorized.delete(listener);
    };
  }

  get apiKey(): string | null {
    return this.#storage.getItem(KEY_STORAGE);
  }

  signIn(key: string): void {
    this.cache.clear();
    this.#storage.setItem(KEY_STORAGE, key);
  }

  signOut(): void {
    this.cache.clear();
    this.#storage.removeItem(KEY_STORAGE);
  }

  #headers(key: string | null = this.apiKey): Record<string, string> {
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (key) headers['X-API-Key'] = key;
    return headers;
  }

  async #fail(res: Response, signOutOn401: boolean): Promise<never> {
    const error = toApiError(res.status, await res.text().catch(() => ''), res.statusText);
    if (res.status === 401 && signOutOn401) {
      this.signOut();
      for (const listener of this.#unauthorized) listener();
    }
    throw error;
  }

  async #call<T>(run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      if (
        error instanceof ApiError ||
        (error instanceof DOMException && error.name === 'AbortError')
      )
        throw error;
      throw new NetworkError('The API did not answer. Is the api-gateway running?', {
        cause: error,
      });
    }
  }

  /** GET a JSON resource with If-None-Match; a 304 hands back the cached body itself. */
  get<T>(path: string, signal?: AbortSignal): Promise<T> {
    return this.#call(async () => {
      const out = await conditionalGet(this.#fetch, this.cache, path, {
        headers: this.#headers(),
        signal,
      });
      if (out instanceof Response) return this.#fail(out, true);
      return out.body as T;
    });
  }

  /** GET without credentials or conditional caching (the app's own config). */
  getPublic<T>(path: string, signal?: AbortSignal): Promise<T> {
    return this.#call(async () => {
      const res = await this.#fetch(path, {
        method: 'GET',
        headers: { Accept: 'application/json' },
        signal,
      });
      if (!res.ok) return this.#fail(res, false);
      return (await res.json()) as T;
    });
  }

  /** POST (actions); resolves with the JSON body, or null for an empty answer. */
  post<T>(path: string, body?: unknown): Promise<T | null> {
    return this.#send<T>('POST', path, body);
  }

  /** PUT (settings: PUT /handlers/{name}); resolves with the JSON body, or null for an empty answer. */
  put<T>(path: string, body: unknown): Promise<T | null> {
    return this.#send<T>('PUT', path, body);
  }

  /** DELETE (DELETE /webhooks/{name}); resolves with null for the empty answer. */
  delete(path: string): Promise<null> {
    return this.#send<null>('DELETE', path);
  }

  #send<T>(method: 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown): Promise<T | null> {
    return this.#call(async () => {
      const headers = this.#headers();
      if (body !== undefined) headers['Content-Type'] = 'application/json';
      const res = await this.#fetch(path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      if (!res.ok) return this.#fail(res, true);
      const textBody = await res.text();
      return textBody ? (JSON.parse(textBody) as T) : null;
    });
  }

  /**
   * Checks a key before keeping it: a cheap authenticated read. A 401 rejects with the ApiError and
   * leaves the stored key alone (the user is still on the sign-in form).
   */
  async verifyKey(key: string): Promise<void> {
    await this.#call(async () => {
      const res = await this.#fetch('/pipelines?limit=1', {
        method: 'GET',
        headers: this.#headers(key),
      });
      if (!res.ok) return this.#fail(res, false);
    });
  }
}
