import type { Cluster } from './cluster.js';

/** One HTTP exchange the test process made: its status, or the error when no answer came. */
export interface Answer {
  method: string;
  path: string;
  status: number | string;
}

/**
 * Records every answer this test process receives through fetch until `stop()`. The stream
 * helpers retry a failed creation until it succeeds, so a test that must show that no request
 * failed counts here what each attempt was answered, first attempts and retries alike.
 */
export function recordAnswers() {
  const original = globalThis.fetch;
  const answers: Answer[] = [];
  globalThis.fetch = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const entry: Answer = { method: init?.method ?? (input instanceof Request ? input.method : 'GET'), path: url.pathname + url.search, status: 'no answer yet' };
    answers.push(entry);
    try {
      const res = await original(input, init);
      entry.status = res.status;
      return res;
    } catch (err) {
      entry.status = String(err);
      throw err;
    }
  };
  return {
    answers,
    /** Every exchange not answered 2xx, as `METHOD path: status`. */
    failures: (): string[] =>
      answers.filter((a) => typeof a.status !== 'number' || a.status < 200 || a.status > 299).map((a) => `${a.method} ${a.path}: ${a.status}`),
    stop(): void {
      globalThis.fetch = original;
    },
  };
}

/** Where each service's output stands now: servedAnswers reads what comes after. */
export function markLogs(cluster: Cluster): Map<string, number> {
  return new Map(cluster.services.map((s) => [s.name, s.lines.length]));
}

/**
 * What the services answered since `marks`, from their access logs (one `request` line per
 * answer): every request counts, the workers' pulls and results too. Failures are 5xx answers;
 * `slowest` is the longest answer that did not wait for work on purpose.
 */
export function servedAnswers(cluster: Cluster, marks: Map<string, number>): { count: number; slowest: string; failures: string[] } {
  let count = 0;
  let slowestMs = -1;
  let slowest = 'none';
  const failures: string[] = [];
  for (const s of cluster.services) {
    for (const line of s.lines.slice(marks.get(s.name) ?? 0)) {
      if (!line.includes('"msg":"request"')) continue;
      const entry = JSON.parse(line) as { method: string; route: string; status: number; durationMs: number };
      count += 1;
      // A pull waits for work (waitSeconds) by design: its duration says nothing of a stall.
      if (entry.route !== '/jobs/pull' && entry.durationMs > slowestMs) [slowestMs, slowest] = [entry.durationMs, `${s.name} ${entry.method} ${entry.route} in ${entry.durationMs} ms`];
      if (entry.status >= 500) failures.push(`${s.name} ${entry.method} ${entry.route}: ${entry.status}`);
    }
  }
  return { count, slowest, failures };
}
