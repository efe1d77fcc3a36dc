import { setTimeout as sleep } from 'node:timers/promises';
import type { Cluster } from './cluster.js';
import { call, waitFor } from './http.js';

/**
 * What the Redis failover tests (Sentinel, Cluster) share: a stream of echo pipelines, a worker of
 * the test's own that records every result answered 202, and the check that every pipeline
 * completed with each stage run once and no accepted result lost.
 */

const STAGES = ['first', 'middle', 'last'];

export interface Accepted {
  stageId: number;
  executionId: string;
  attempt: number;
  /** When the request that got the 202 was sent, and when the 202 came. */
  sentAt: number;
  at: number;
}

/** `count` three-stage echo pipelines, one every `paceMs`, creations retried (same idempotency key) while Redis fails over. */
export async function streamEchoPipelines(cluster: Cluster, apiKey: string, count: number, paceMs: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const stages = STAGES.map((name) => ({ stageName: name, stageHandlerName: 'echo', input: `${name}-${i}` }));
    const [id] = await Promise.all([
      waitFor(
        `creation #${i}`,
        async () => {
          const r = await call(cluster.apiUrl, 'POST', '/pipelines/idempotent', { json: { idempotencyKey: `p-${i}`, name: `p-${i}`, stages }, headers: { 'x-api-key': apiKey } });
          return r.status === 200 || r.status === 201 ? (r.body.pipeline.id as number) : undefined;
        },
        30_000,
        200,
      ),
      sleep(paceMs),
    ]);
    ids.push(id);
  }
  return ids;
}

/**
 * A worker of the test's own beside the SDK worker: pull, lease, ack, `workMs` of handler time,
 * result (the echo's output), until `until`; results are retried like an SDK worker's. Every
 * result answered 202 is recorded.
 */
export async function probeWorker(cluster: Cluster, app: { apiKey: string; applicationId: number }, instanceId: string, until: number, accepted: Accepted[], workMs = 0): Promise<void> {
  const headers = { 'x-api-key': app.apiKey };
  const session = await call(cluster.workerUrl, 'POST', '/workers/bootstrap', { json: { instanceId, handlers: ['echo'] }, headers });
  if (session.status !== 200) throw new Error(`bootstrap answered ${session.status}`);
  const workerHeaders = { ...headers, 'x-worker-session': session.body.sessionToken as string };
  const workerId = session.body.workerId as string;
  const queue = `app_${app.applicationId}_echo_StageNext`;
  const attempt = async <T>(f: () => Promise<T>): Promise<T | undefined> => f().catch(() => undefined);
  while (Date.now() < until) {
    const pulled = await attempt(() => call(cluster.workerUrl, 'POST', '/jobs/pull', { json: { queue, waitSeconds: 1 }, headers: workerHeaders }));
    if (pulled?.status !== 200) {
      await sleep(100);
      continue;
    }
    const { stageId, executionId, input } = pulled.body.payload as { stageId: number; executionId: string; input: string };
    const lease = await attempt(() => call(cluster.workerUrl, 'POST', `/stages/${stageId}/lease/acquire`, { json: { executionId, workerId }, headers: workerHeaders }));
    await attempt(() => call(cluster.workerUrl, 'POST', '/jobs/ack', { json: { token: pulled.body.token } }));
    if (!lease?.body?.acquired) continue;
    if (workMs > 0) await sleep(workMs);
    const result = { stageId, executionId, attempt: lease.body.attempt as number, isSuccess: true, result: input };
    await waitFor(
      `result of stage ${stageId}`,
      async () => {
        const sentAt = Date.now();
        const r = await attempt(() => call(cluster.workerUrl, 'POST', `/stages/${stageId}/result`, { json: result, headers: workerHeaders }));
        if (r?.status === 202) accepted.push({ stageId, executionId, attempt: result.attempt, sentAt, at: Date.now() });
        return r && r.status < 500 ? r : undefined;
      },
      20_000,
      200,
    ).catch(() => undefined);
  }
}

/**
 * What went wrong with the pipelines `runs` created: one not Completed, an output not its input, a
 * stage with other than one execution ended by its result (lost, expired or run twice), a result
 * applied twice; and every 202'd result whose stage did not complete by that very execution (lost).
 */
export async function failoverProblems(cluster: Cluster, runs: { apiKey: string; ids: number[] }[], accepted: Accepted[], killedAt: number): Promise<{ problems: string[]; lostAccepted: string[] }> {
  const problems: string[] = [];
  const rows = await cluster.database.db.$queryRaw<{ stage_id: bigint; status: string; ends: (string | null)[] }[]>`
    SELECT s.id AS stage_id, s.status, array_agg(e.end_reason ORDER BY e.dispatched_at) FILTER (WHERE e.id IS NOT NULL) AS ends
    FROM stages s LEFT JOIN stage_executions e ON e.stage_id = s.id GROUP BY s.id`;
  const stages = new Map(rows.map((r) => [Number(r.stage_id), r]));
  for (const run of runs) {
    for (const [i, id] of run.ids.entries()) {
      const p = (await call(cluster.apiUrl, 'GET', `/pipelines/${id}`, { headers: { 'x-api-key': run.apiKey } })).body;
      const where = `pipeline ${id} (#${i})`;
      if (p.status !== 'Completed') {
        const seen = p.stages.map((s: { id: number; name: string; status: string; attempt: number }) => `${s.name}:${s.status}#${s.attempt} ${JSON.stringify(stages.get(s.id)?.ends)}`);
        problems.push(`${where} is ${p.status}: ${seen.join(' ')}`);
        continue;
      }
      for (const s of p.stages as { id: number; name: string; output: string; logs: { message: string }[] }[]) {
        const ends = stages.get(s.id)?.ends ?? [];
        if (s.output !== `${s.name}-${i}`) problems.push(`${where} stage ${s.name}: output ${JSON.stringify(s.output)}`);
        if (JSON.stringify(ends) !== '["result"]') problems.push(`${where} stage ${s.name}: executions ended ${JSON.stringify(ends)}`);
        if (s.logs.filter((l) => l.message.startsWith('echoing')).length > 1) problems.push(`${where} stage ${s.name}: result applied more than once`);
      }
    }
  }
  const acceptedEnds = new Map(
    (
      await cluster.database.db.$queryRaw<{ id: string; end_reason: string | null }[]>`
        SELECT id::text, end_reason FROM stage_executions WHERE id = ANY(${accepted.map((a) => a.executionId)}::uuid[])`
    ).map((r) => [r.id, r.end_reason]),
  );
  const lostAccepted = accepted
    .map((a) => ({ ...a, row: stages.get(a.stageId), end: acceptedEnds.get(a.executionId) }))
    .filter((a) => a.row?.status !== 'Completed' || a.row.ends.includes('LEASE_EXPIRED') || a.end !== 'result')
    .map((a) => `stage ${a.stageId} execution ${a.executionId} #${a.attempt} 202'd at +${a.at - killedAt} ms: stage ${a.row?.status} ${JSON.stringify(a.row?.ends)}, this execution ${a.end}`);
  return { problems, lostAccepted };
}

/**
 * Stage completions around a failover at `at` (ms since the epoch), by the executions' ends in
 * PostgreSQL: the first completion of an execution leased after `at` (its lease, result and
 * application all came after the kill) and the last completion of all.
 */
export async function completionsAround(cluster: Cluster, at: number): Promise<{ firstLeasedAfter?: number; last?: number }> {
  const [row] = await cluster.database.db.$queryRaw<{ first: Date | null; last: Date | null }[]>`
    SELECT min(ended_at) FILTER (WHERE leased_at > to_timestamp(${at / 1000}::float8)) AS first, max(ended_at) AS last
    FROM stage_executions WHERE end_reason = 'result'`;
  return { firstLeasedAfter: row?.first?.getTime(), last: row?.last?.getTime() };
}
