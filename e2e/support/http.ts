export interface Reply {
  status: number;
  headers: Headers;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- e2e tests read arbitrary JSON
  body: any;
}

/** A JSON HTTP call as any client would make it. */
export async function call(base: string, method: string, path: string, options: { json?: unknown; headers?: Record<string, string> } = {}): Promise<Reply> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...options.headers },
    body: options.json === undefined ? undefined : JSON.stringify(options.json),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
}

/** Polls until `check` returns a value (not undefined), or throws after timeoutMs. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 20_000, everyMs = 100): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < until) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
}
