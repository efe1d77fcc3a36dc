import { sqlOf, statement, type Db } from '@po/db';
import type { StageOptions } from '@po/domain';
import type { StageNextPublisher } from '@po/queues';
import { rememberSensitiveItems } from '@po/telemetry';
import type { ContextItem, StageNextJob } from '@po/contracts';
import { INLINE_CONTEXT_MAX_BYTES, contextBytes, snapshotOf, writeSnapshots, type ContextSnapshot } from './context-snapshots.js';
import { byQueue, stageNextMessage } from './messages.js';
import { readContexts } from './store-contexts.js';

/**
 * Republishing StageNext messages Redis lost (decisions 0121, 0124), many at once: the sweeper's
 * lost-message walk hands over the executions whose job is gone, a page of thousands after a
 * FLUSHALL. Reads only, outside any transaction (no row is locked or written but a context
 * snapshot), then one addBulk per queue: the Pending rows are the outbox, this is its relay.
 */

/**
 * The stages of the executions named, with what their message needs (one statement): looked up by
 * key, each one's pipeline too. Whether each is still Pending on that execution is decided here:
 * a condition on the status would let the planner read every Pending stage through the
 * (application_id, status) index when its statistics lag a burst of them.
 */
const READ_STAGES = statement(
  'engine_republish_read_stages',
  `SELECT s.id, s.pipeline_id, s.application_id, s.name, s.handler_name, s.input, s.options, s.span_id, s.attempt,
          s.current_execution_id::text AS execution_id, s.status = 'Pending' AS pending,
          (SELECT p.trace_id FROM pipelines p WHERE p.id = s.pipeline_id) AS trace_id
   FROM stages s WHERE s.id = ANY($1::bigint[])`,
  { plan: 'custom' },
);

interface StageRow {
  id: string;
  pipeline_id: string;
  application_id: number;
  name: string;
  handler_name: string;
  input: string;
  options: StageOptions;
  span_id: string;
  attempt: number;
  execution_id: string | null;
  pending: boolean;
  trace_id: string;
}

/** Messages per addBulk: one ioredis pipeline each, so a page of thousands is not one huge write. */
const PUBLISH_CHUNK = 500;

export interface LostMessage {
  executionId: string;
  stageId: number;
}

/**
 * Publishes the messages of the executions that are still their stage's Pending one, with the
 * context as it is now; the others (leased, cancelled, retried since) are left alone. The job id
 * is the execution id, so a message that is in Redis after all (in any state) is not added again.
 * Resolves with the execution ids published; rejects when a queue's publish failed (the walk
 * looks at them again), once every queue was tried.
 */
export async function republishLost(deps: { db: Db; publisher: StageNextPublisher }, lost: readonly LostMessage[]): Promise<string[]> {
  if (lost.length === 0) return [];
  const sql = sqlOf(deps.db);
  const named = new Set(lost.map((l) => l.executionId));
  const rows = (await sql.query<StageRow>(READ_STAGES, [lost.map((l) => l.stageId)])).filter((r) => r.pending && r.execution_id !== null && named.has(r.execution_id));
  if (rows.length === 0) return [];
  const applications = new Map(rows.map((r) => [Number(r.pipeline_id), r.application_id]));
  const contexts = await readContexts(sql, [...applications.keys()]);
  const shown = new Map<number, { items: ContextItem[]; snapshot?: ContextSnapshot }>();
  for (const [pipelineId, entries] of contexts) {
    const items = entries.map((c) => ({ ...c, isDeleted: false }));
    const applicationId = applications.get(pipelineId)!;
    shown.set(pipelineId, contextBytes(items) > INLINE_CONTEXT_MAX_BYTES ? { items, snapshot: snapshotOf(pipelineId, applicationId, items) } : { items });
  }
  // A snapshot a message names exists before the message does (decision 0121).
  await writeSnapshots(sql, [...shown.values()].flatMap((c) => (c.snapshot ? [c.snapshot] : [])));
  for (const c of shown.values()) rememberSensitiveItems(c.items);

  const dispatchedAt = new Date();
  const outgoing = rows.map((r) => {
    const pipelineId = Number(r.pipeline_id);
    const context = shown.get(pipelineId)!;
    return stageNextMessage({
      applicationId: r.application_id,
      pipelineId,
      traceId: r.trace_id,
      stage: { id: Number(r.id), name: r.name, handlerName: r.handler_name, input: r.input, options: r.options, spanId: r.span_id, attempt: r.attempt },
      executionId: r.execution_id!,
      context: context.snapshot ? [] : context.items,
      ...(context.snapshot ? { contextSnapshotId: context.snapshot.id } : {}),
      dispatchedAt,
    });
  });
  const published: string[] = [];
  const results = await Promise.allSettled(
    [...byQueue(outgoing)].map(async ([queue, messages]) => {
      for (let i = 0; i < messages.length; i += PUBLISH_CHUNK) {
        const chunk: StageNextJob[] = messages.slice(i, i + PUBLISH_CHUNK);
        // One job per message, its id the execution id: not added twice if it is there after all.
        await deps.publisher.publish(queue, chunk, { batch: false });
        for (const m of chunk) published.push(m.executionId);
      }
    }),
  );
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return published;
}
