import { setTimeout as sleep } from 'node:timers/promises';
import type { Cluster } from './cluster.js';
import { call, waitFor } from './http.js';

// A steady stream of 3-stage pipelines for the durability tests (issue 9), and the one check they
// all make afterwards: every pipeline Completed, every stage's output right, each stage's result
// applied once, and one execution per attempt.

interface Planned {
  stage: { stageName: string; stageHandlerName: string; input: string; options?: Record<string, unknown> };
  output: string;
  /** The handler's own log line on success: it arrives with the result, so it counts applications. */
  successLog: string;
  attempts: number;
}

/** Pipeline i: echo, then echo or (every 5th) flaky failing once before its retry, then echo. */
function plan(i: number): Planned[] {
  const echo = (name: string): Planned => ({
    stage: { stageName: name, stageHandlerName: 'echo', input: `${name}-${i}` },
    output: `${name}-${i}`,
    successLog: 'echoing',
    attempts: 1,
  });
  const flaky: Planned = {
    stage: { stageName: 'middle', stageHandlerName: 'flaky', input: '{"failures":1}', options: { maxRetries: 2, retryInterval: 1 } },
    output: '{"attempt":2}',
    successLog: 'succeeded on attempt',
    attempts: 2,
  };
  return [echo('first'), i % 5 === 0 ? flaky : echo('middle'), echo('last')];
}

/** The example worker's handlers this stream needs. */
export const STREAM_HANDLERS = 'echo,flaky';

/**
 * Creates `count` pipelines one after another, at most one per `paceMs`, so they keep flowing
 * while the test breaks something. A creation that fails (5xx, connection error) is retried with
 * the same idempotency key, which makes the retry safe. Returns the pipeline ids in order (fewer
 * than `count` when a service process exited meanwhile).
 */
export async function createStream(cluster: Cluster, key: string, label: string, count: number, paceMs: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < count; i += 1) {
    // A crashed service is not restarted here: stop early and let the checks report it.
    if (cluster.services.some((s) => !s.running)) break;
    const stages = plan(i).map((p) => p.stage);
    const [id] = await Promise.all([
      waitFor(`creation of ${label}-${i}`, async () => {
        const r = await call(cluster.apiUrl, 'POST', '/pipelines/idempotent', {
          json: { idempotencyKey: `${label}-${i}`, name: `${label}-${i}`, stages },
          headers: { 'x-api-key': key },
        });
        return r.status === 200 || r.status === 201 ? (r.body.pipeline.id as number) : undefined;
      }, 30_000, 200),
      sleep(paceMs),
    ]);
    ids.push(id);
  }
  return ids;
}

/** How many of the cluster's pipelines are not terminal yet (one query: polling it costs the services nothing). */
export async function unfinishedCount(cluster: Cluster): Promise<number> {
  const [row] = await cluster.database.db.$queryRaw<{ n: bigint }[]>`
    SELECT COUNT(*) AS n FROM pipelines WHERE status NOT IN ('Completed', 'Failed', 'Cancelled')`;
  return Number(row!.n);
}

/**
 * Waits until every pipeline is terminal, then lists every deviation from "each pipeline
 * Completed, each stage's output right, its result applied once, one execution per attempt"
 * (an empty list means the run was clean). On a timeout, or as soon as a service process exited,
 * the list names the pipelines not done.
 */
export async function streamProblems(cluster: Cluster, key: string, ids: number[], timeoutMs: number): Promise<string[]> {
  const settled = async () => ((await unfinishedCount(cluster)) === 0 || cluster.services.some((s) => !s.running) ? true : undefined);
  await waitFor(`all ${ids.length} pipelines terminal`, settled, timeoutMs, 500).catch(() => undefined); // reported below, one by one
  const read = (id: number) => call(cluster.apiUrl, 'GET', `/pipelines/${id}`, { headers: { 'x-api-key': key } }).then((r) => r.body, () => null);
  const finals = await Promise.all(ids.map(read));
  const problems: string[] = [];
  const rows = await cluster.database.db.$queryRaw<{ stage_id: bigint; executions: bigint; results: bigint; ends: (string | null)[] | null; latest: string | null }[]>`
    SELECT s.id AS stage_id, COUNT(e.id) AS executions, COUNT(e.id) FILTER (WHERE e.end_reason = 'result') AS results,
           array_agg(e.end_reason ORDER BY e.dispatched_at) FILTER (WHERE e.id IS NOT NULL) AS ends,
           (array_agg(CASE WHEN e.ended_at IS NOT NULL THEN 'ended' WHEN e.leased_at IS NOT NULL THEN 'leased'
                           ELSE 'published' END ORDER BY e.dispatched_at DESC)
             FILTER (WHERE e.id IS NOT NULL))[1] AS latest
    FROM stages s LEFT JOIN stage_executions e ON e.stage_id = s.id GROUP BY s.id`;
  const executions = new Map(rows.map((r) => [Number(r.stage_id), r]));
  finals.forEach((p, i) => {
    const id = ids[i]!;
    if (p?.status !== 'Completed') {
      // name:Status#attempt and, for a dispatched stage, where its latest execution got to
      const stages = (p?.stages ?? [])
        .map((s: { id: number; name: string; status: string; attempt: number }) => `${s.name}:${s.status}#${s.attempt}${executions.get(s.id)?.latest ? `(${executions.get(s.id)!.latest})` : ''}`)
        .join(' ');
      problems.push(`pipeline ${id} (#${i}) is ${p?.status ?? 'unreadable'}: ${stages}`);
      return;
    }
    const planned = plan(i);
    if (p.stages.length !== planned.length) problems.push(`pipeline ${id} (#${i}) has ${p.stages.length} stages, expected ${planned.length}`);
    planned.forEach((want, position) => {
      const s = p.stages[position];
      if (!s) return;
      const where = `pipeline ${id} (#${i}) stage ${want.stage.stageName}`;
      const applied = s.logs.filter((l: { message: string }) => l.message.startsWith(want.successLog)).length;
      const e = executions.get(s.id);
      if (s.output !== want.output) problems.push(`${where}: output ${JSON.stringify(s.output)}, expected ${JSON.stringify(want.output)}`);
      if (applied !== 1) problems.push(`${where}: successful result applied ${applied} times (handler log lines)`);
      if (s.attempt !== want.attempts) problems.push(`${where}: attempt ${s.attempt}, expected ${want.attempts}`);
      if (!e) problems.push(`${where}: no stage ${s.id} in the database`);
      else if (Number(e.executions) !== s.attempt || Number(e.results) !== want.attempts) {
        problems.push(`${where}: ${e.executions} executions (${e.results} ended by a result) for attempt ${s.attempt}, ends ${JSON.stringify(e.ends)}`);
      }
    });
  });
  // Past a few, the rest say the same: keep the report readable.
  return problems.length > 20 ? [...problems.slice(0, 20), `… and ${problems.length - 20} more`] : problems;
}

/** Services that exited (with the start of their crash output) or whose GET /readyz does not answer 200. */
export async function unreadyServices(cluster: Cluster): Promise<string[]> {
  const answers = await Promise.all(
    cluster.services.map(async (s) => {
      if (!s.running) {
        // Node prints an uncaught error as `file:line`, the source line, a caret, a blank, the error.
        const crash = s.lines.findLastIndex((l) => /^(node:)?\S+:\d+$/.test(l));
        return `${s.name}: exited; ${(crash < 0 ? s.lines.slice(-4) : s.lines.slice(crash, crash + 5)).filter((l) => l.trim()).join(' | ')}`;
      }
      const status = await fetch(`${s.url}/readyz`).then((r) => r.status, (err: unknown) => String(err));
      return status === 200 ? undefined : `${s.name}: /readyz ${status}`;
    }),
  );
  return answers.filter((a): a is string => a !== undefined);
}

/** Error and fatal lines the services logged (pino JSON, numeric or named levels). */
export function errorLines(cluster: Cluster): string[] {
  return cluster.services.flatMap((s) => s.lines.filter((l) => /"level":"?(50|60|error|fatal)/.test(l)).map((l) => `${s.name}: ${l}`));
}
