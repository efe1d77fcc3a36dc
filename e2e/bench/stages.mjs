// What the engine bench reads back from PostgreSQL (only pipelines(id, status, created_at,
// finished_at), stages(id, pipeline_id, position, status, finished_at) and
// stage_executions(id, stage_id, dispatched_at)): when every pipeline is terminal, and where each
// stage's time went (with the workers' instants and the messages' dispatchedAt).
import { setTimeout as sleep } from 'node:timers/promises';
import { summarize } from './cluster.mjs';

const TERMINAL = "('Completed','Failed','Cancelled')";
const STALL_SECONDS = Number(process.env.BENCH_STALL_SECONDS ?? 120);

/**
 * Polls PostgreSQL (one count per 100 ms) until every pipeline of `ids` is terminal, then reads
 * the instant of the last terminal state: { endMs: max(finished_at), statusCounts, completed }.
 * Throws when a service exits or nothing moves for BENCH_STALL_SECONDS.
 */
export async function waitAllTerminal(cluster, db, ids) {
  if (ids.length === 0) throw new Error('no pipeline was created');
  let last = -1;
  let movedAt = Date.now();
  for (;;) {
    const { rows } = await db.query(
      `SELECT count(*)::int AS n FROM pipelines WHERE id = ANY($1::bigint[]) AND status IN ${TERMINAL}`,
      [ids],
    );
    const n = rows[0].n;
    if (n === ids.length) break;
    if (n !== last) [last, movedAt] = [n, Date.now()];
    const failure = cluster.failure();
    if (failure) throw new Error(`${failure}; ${n}/${ids.length} pipelines terminal`);
    if (Date.now() - movedAt > STALL_SECONDS * 1000) {
      const { rows: by } = await db.query(
        'SELECT status, count(*)::int AS n FROM stages WHERE pipeline_id = ANY($1::bigint[]) GROUP BY status',
        [ids],
      );
      throw new Error(
        `no progress for ${STALL_SECONDS} s: ${n}/${ids.length} pipelines terminal; stages: ${JSON.stringify(Object.fromEntries(by.map((r) => [r.status, r.n])))}`,
      );
    }
    await sleep(100);
  }
  const { rows } = await db.query(
    'SELECT status, count(*)::int AS n, max(finished_at) AS end FROM pipelines WHERE id = ANY($1::bigint[]) GROUP BY status',
    [ids],
  );
  const statusCounts = Object.fromEntries(rows.map((r) => [r.status, r.n]));
  const endMs = Math.max(...rows.map((r) => r.end?.getTime() ?? -Infinity));
  return { endMs, statusCounts, completed: statusCounts.Completed ?? 0 };
}

/**
 * Waits until the first stage of every pipeline of `ids` has an execution (the dispatcher caught
 * up with the creations); resolves with the seconds it took, or null after `timeoutMs`.
 */
export async function waitFirstDispatch(db, ids, timeoutMs = 60_000) {
  const t0 = Date.now();
  while (Date.now() - t0 < timeoutMs) {
    const { rows } = await db.query(
      `SELECT count(DISTINCT s.pipeline_id)::int AS n FROM stages s JOIN stage_executions e ON e.stage_id = s.id
       WHERE s.pipeline_id = ANY($1::bigint[])`,
      [ids],
    );
    if (rows[0].n >= ids.length) return +((Date.now() - t0) / 1000).toFixed(2);
    await sleep(100);
  }
  return null;
}

/**
 * Per-stage latencies (ms) of the pipelines `ids`, from PostgreSQL and the workers' instants
 * (received: stageId → pull answered, accepted: stageId → result 202, leased: stageId → lease held, published: stageId → the
 * dispatchedAt its message carried, the moment the engine published it). "ready" is the pipeline's
 * created_at for its first stage and the previous stage's finished_at for the others; each stage's
 * first execution counts.
 */
export async function stageLatencies(db, ids, { received, accepted, published, leased = new Map() }) {
  const { rows: stages } = await db.query(
    `SELECT s.id, s.pipeline_id, s.position, s.finished_at, p.created_at AS pipeline_created_at
     FROM stages s JOIN pipelines p ON p.id = s.pipeline_id
     WHERE s.pipeline_id = ANY($1::bigint[]) ORDER BY s.pipeline_id, s.position`,
    [ids],
  );
  const { rows: executions } = await db.query(
    `SELECT DISTINCT ON (e.stage_id) e.stage_id, e.dispatched_at
     FROM stage_executions e JOIN stages s ON s.id = e.stage_id
     WHERE s.pipeline_id = ANY($1::bigint[]) ORDER BY e.stage_id, e.dispatched_at`,
    [ids],
  );
  const first = new Map(executions.map((e) => [Number(e.stage_id), e]));
  const series = {
    readyToPublished: [],
    readyToPulled: [],
    result202ToNextPulled: [],
    readyToLeased: [],
    result202ToNextLeased: [],
    readyToDispatched: [],
    firstStageReadyToPublished: [],
    nextStageReadyToPublished: [],
    dispatchedToPublished: [],
    publishedToPulled: [],
    pulledToResult202: [],
    result202ToFinished: [],
  };
  const push = (key, a, b) => {
    if (a !== undefined && a !== null && b !== undefined && b !== null) series[key].push(b - a);
  };
  let previous = null;
  for (const s of stages) {
    const id = Number(s.id);
    const samePipeline = previous !== null && previous.pipeline_id === s.pipeline_id;
    const readyAt = samePipeline
      ? previous.finished_at?.getTime()
      : s.pipeline_created_at.getTime();
    const e = first.get(id);
    const dispatchedAt = e?.dispatched_at?.getTime();
    const publishedAt = published.get(id);
    const pulledAt = received.get(id);
    const acceptedAt = accepted.get(id);
    push('readyToPublished', readyAt, publishedAt);
    push('readyToPulled', readyAt, pulledAt);
    if (samePipeline) push('result202ToNextPulled', accepted.get(Number(previous.id)), pulledAt);
    push('readyToLeased', readyAt, leased.get(id));
    if (samePipeline) push('result202ToNextLeased', accepted.get(Number(previous.id)), leased.get(id));
    push('readyToDispatched', readyAt, dispatchedAt);
    // A first stage is dispatched by pipeline-service after the creation; the others by the
    // result-consumer in the transaction that applies the previous stage's result.
    push(samePipeline ? 'nextStageReadyToPublished' : 'firstStageReadyToPublished', readyAt, publishedAt);
    push('dispatchedToPublished', dispatchedAt, publishedAt);
    push('publishedToPulled', publishedAt, pulledAt);
    push('pulledToResult202', pulledAt, acceptedAt);
    push('result202ToFinished', acceptedAt, s.finished_at?.getTime());
    previous = s;
  }
  const sum = Object.fromEntries(Object.entries(series).map(([k, v]) => [k, summarize(v)]));
  return {
    latencyMs: {
      readyToPublished: sum.readyToPublished,
      readyToPulled: sum.readyToPulled,
      result202ToNextPulled: sum.result202ToNextPulled,
      // The worker holds the lease: with decision 0098 that is the pull's answer, before it the
      // answer of the lease/acquire call that followed — the moment the handler can start.
      readyToLeased: sum.readyToLeased,
      result202ToNextLeased: sum.result202ToNextLeased,
    },
    breakdownMs: {
      readyToDispatched: sum.readyToDispatched,
      firstStageReadyToPublished: sum.firstStageReadyToPublished,
      nextStageReadyToPublished: sum.nextStageReadyToPublished,
      dispatchedToPublished: sum.dispatchedToPublished,
      publishedToPulled: sum.publishedToPulled,
      pulledToResult202: sum.pulledToResult202,
      result202ToFinished: sum.result202ToFinished,
    },
  };
}
