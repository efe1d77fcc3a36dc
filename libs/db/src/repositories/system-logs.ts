import type { Prisma } from '../generated/prisma/client.js';
import type { DbOrTx } from '../db-types.js';

export interface NewSystemLog {
  applicationId: number | null;
  message: string;
  logLevel: string;
  pipelineId: number | null;
  stageId: number | null;
  keywords: { key: string; value: string }[] | null;
  created: Date;
}

export async function insertSystemLog(db: DbOrTx, log: NewSystemLog): Promise<number> {
  const row = await db.systemLog.create({
    data: {
      ...log,
      pipelineId: log.pipelineId === null ? null : BigInt(log.pipelineId),
      stageId: log.stageId === null ? null : BigInt(log.stageId),
      keywords: log.keywords === null ? undefined : (log.keywords as Prisma.InputJsonValue),
    },
    select: { id: true },
  });
  return Number(row.id);
}
