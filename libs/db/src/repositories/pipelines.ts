import type { NewPipeline, NewStage, PipelineStatus } from '@po/domain';
import { newSpanId } from '@po/domain';
import type { DbOrTx } from '../db-types.js';
import type { Prisma } from '../generated/prisma/client.js';

const json = (value: unknown): Prisma.InputJsonValue => value as Prisma.InputJsonValue;

/**
 * Inserts a pipeline with its stages, context and keywords, due for its first dispatcher pass;
 * call inside a transaction.
 */
export async function insertPipeline(tx: DbOrTx, p: NewPipeline, now: Date): Promise<number> {
  const pipeline = await tx.pipeline.create({
    data: {
      applicationId: p.applicationId,
      name: p.name,
      traceId: p.traceId,
      policies: p.policies === null ? undefined : json(p.policies),
      idempotencyKey: p.idempotencyKey,
      scheduleId: p.scheduleId === null ? null : BigInt(p.scheduleId),
      createdAt: now,
      dispatchRequestedAt: now,
    },
    select: { id: true },
  });
  await insertStages(tx, pipeline.id, p.applicationId, 0, p.stages);
  // Context keys are unique per pipeline; a repeated key keeps its last value.
  const context = new Map(p.contextItems.map((c) => [c.key, c]));
  if (context.size > 0) {
    await tx.contextItem.createMany({ data: [...context.values()].map((c) => ({ ...c, pipelineId: pipeline.id })) });
  }
  if (p.keywords.length > 0) {
    await tx.pipelineKeyword.createMany({ data: p.keywords.map((k) => ({ ...k, pipelineId: pipeline.id })) });
  }
  return Number(pipeline.id);
}

export async function insertStages(
  tx: DbOrTx,
  pipelineId: bigint,
  applicationId: number,
  firstPosition: number,
  stages: readonly NewStage[],
): Promise<void> {
  await tx.stage.createMany({
    data: stages.map((s, i) => ({
      pipelineId,
      applicationId,
      position: firstPosition + i,
      name: s.name,
      handlerName: s.handlerName,
      description: s.description,
      input: s.input,
      options: json(s.options),
      policies: s.policies === null ? undefined : json(s.policies),
      isEvent: s.isEvent,
      spanId: newSpanId(),
    })),
  });
}

/** Locks the pipeline row for the rest of the transaction (cancel and append serialise on it). */
export async function lockPipeline(
  tx: DbOrTx,
  pipelineId: number,
): Promise<{ id: number; applicationId: number; status: PipelineStatus } | null> {
  const rows = await tx.$queryRaw<{ id: bigint; application_id: number; status: PipelineStatus }[]>`
    SELECT id, application_id, status::text AS status FROM pipelines WHERE id = ${BigInt(pipelineId)} FOR UPDATE`;
  const row = rows[0];
  return row ? { id: Number(row.id), applicationId: row.application_id, status: row.status } : null;
}

export async function pipelineOwner(db: DbOrTx, pipelineId: number): Promise<number | null> {
  const p = await db.pipeline.findUnique({ where: { id: BigInt(pipelineId) }, select: { applicationId: true } });
  return p?.applicationId ?? null;
}

const PIPELINE_VIEW = {
  stages: {
    orderBy: { position: 'asc' },
    include: { logs: { orderBy: [{ created: 'asc' }, { id: 'asc' }] } },
  },
  contextItems: { orderBy: { id: 'asc' } },
  keywords: { orderBy: { id: 'asc' } },
} as const satisfies Prisma.PipelineInclude;

export type PipelineRecord = Prisma.PipelineGetPayload<{ include: typeof PIPELINE_VIEW }>;
export type StageRecord = PipelineRecord['stages'][number];

/** Everything a PipelineResponse shows, in position order. */
export async function loadPipeline(db: DbOrTx, pipelineId: number): Promise<PipelineRecord | null> {
  return db.pipeline.findUnique({ where: { id: BigInt(pipelineId) }, include: PIPELINE_VIEW });
}

export async function markPipelineCancelled(tx: DbOrTx, pipelineId: number, now: Date): Promise<void> {
  await tx.pipeline.update({ where: { id: BigInt(pipelineId) }, data: { status: 'Cancelled', finishedAt: now } });
}
