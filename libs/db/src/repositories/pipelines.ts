import type { PipelineStatus } from '@po/domain';
import type { DbOrTx } from '../db-types.js';
import type { Prisma } from '../generated/prisma/client.js';

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

const PIPELINE_ROWS = {
  stages: {
    orderBy: { position: 'asc' },
    include: { logs: { orderBy: [{ created: 'asc' }, { id: 'asc' }] } },
  },
  contextItems: { orderBy: { id: 'asc' } },
  keywords: { orderBy: { id: 'asc' } },
} as const satisfies Prisma.PipelineInclude;

/**
 * Every column of a pipeline and its rows, through Prisma: for tests and tools. Outside a
 * transaction its statements read different moments; the API reads with readPipeline.
 */
export async function loadPipeline(db: DbOrTx, pipelineId: number): Promise<Prisma.PipelineGetPayload<{ include: typeof PIPELINE_ROWS }> | null> {
  return db.pipeline.findUnique({ where: { id: BigInt(pipelineId) }, include: PIPELINE_ROWS });
}
