import {
  CancellationTimeout,
  NotFound,
  PipelineTerminal,
  ValidationFailed,
  checkAddedStages,
  isTerminalPipeline,
  stageFromInfo,
  type StageInfoInput,
} from '@po/domain';
import { lockPipeline, readPipeline, type DbOrTx } from '@po/db';
import { appendPipelineStages, lockPipelineRow, stageNamesInOrder } from '@po/engine';
import { cancelLockedPipeline } from '@po/engine';
import { announce, type Deps } from '../deps.js';
import { pipelineResponse, stageDto, type PipelineResponse } from './view.js';

/** Locks the application's pipeline; another application's pipeline is simply not found. */
async function lockOwnPipeline(tx: DbOrTx, applicationId: number, pipelineId: number) {
  const pipeline = await lockPipeline(tx, pipelineId);
  if (!pipeline || pipeline.applicationId !== applicationId) throw new NotFound(`Pipeline ${pipelineId} not found.`);
  return pipeline;
}

/**
 * POST /pipelines/{id}/cancel: the pipeline and every unfinished stage become Cancelled in one
 * transaction, and their executions end so renewals are refused and late results fenced.
 */
export async function cancelPipeline(deps: Deps, applicationId: number, pipelineId: number): Promise<PipelineResponse> {
  const timeoutMs = deps.cancelTimeoutSeconds * 1000;
  const started = Date.now();
  try {
    await deps.db.$transaction(
      async (tx) => {
        await tx.$executeRawUnsafe(`SET LOCAL lock_timeout = '${timeoutMs}ms'`);
        const pipeline = await lockOwnPipeline(tx, applicationId, pipelineId);
        if (isTerminalPipeline(pipeline.status)) throw new PipelineTerminal(pipelineId, pipeline.status);
        const now = deps.clock();
        await cancelLockedPipeline(tx, pipelineId, now);
      },
      { timeout: timeoutMs, maxWait: timeoutMs },
    );
  } catch (err) {
    if (err instanceof NotFound || err instanceof PipelineTerminal) throw err;
    if (Date.now() - started >= timeoutMs || isLockTimeout(err)) throw new CancellationTimeout(deps.cancelTimeoutSeconds);
    throw err;
  }
  await announce(deps, { type: 'pipeline.cancelled', applicationId, pipelineId });
  const record = await readPipeline(deps.sql, pipelineId);
  if (!record) throw new Error(`pipeline ${pipelineId} vanished after cancel`);
  return pipelineResponse(record);
}

function isLockTimeout(err: unknown): boolean {
  const text = String((err as { message?: unknown })?.message ?? '');
  return text.includes('55P03') || text.includes('lock timeout') || text.includes('P2028');
}

/** POST /pipelines/{id}/stages: appended at the end, NotStarted; the pipeline status is unchanged. */
export async function appendStages(
  deps: Deps,
  applicationId: number,
  pipelineId: number,
  items: StageInfoInput[],
): Promise<ReturnType<typeof stageDto>[]> {
  const appended = await deps.sql.transaction(async (tx) => {
    const pipeline = await lockPipelineRow(tx, pipelineId);
    if (!pipeline || pipeline.applicationId !== applicationId) throw new NotFound(`Pipeline ${pipelineId} not found.`);
    const stages = items.map((item) => stageFromInfo(item, pipeline.priority));
    const names = await stageNamesInOrder(tx, pipelineId);
    const errors = checkAddedStages(names, stages);
    if (errors.length > 0) throw new ValidationFailed(errors);
    if (isTerminalPipeline(pipeline.status)) throw new PipelineTerminal(pipelineId, pipeline.status);
    return appendPipelineStages(tx, pipelineId, names.length, stages, deps.clock());
  });
  await announce(deps, {
    type: 'stages.appended',
    applicationId,
    pipelineId,
    stageIds: appended.map((s) => s.id),
  });
  return appended.map((s, i) => stageDto(s, appended[i + 1] ?? null));
}
