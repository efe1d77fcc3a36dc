import {
  DecisionConflict,
  NotFound,
  StageNotWaiting,
  decideResume,
  redactSecrets,
  rejectionLogMessage,
} from '@po/domain';
import { lockPipeline, sensitiveValues } from '@po/db';
import { lockStage, pipelineOfStage, recordApprovalDecision, refreshPipelineStatus } from '@po/engine';
import { announce, type Deps } from '../deps.js';

/** POST /stages/{id}/resume: records the approval decision of a WaitingForApproval stage. */
export async function resumeStage(
  deps: Deps,
  applicationId: number,
  stageId: number,
  input: { approved: boolean; rejectionReason?: string },
): Promise<void> {
  const outcome = await deps.db.$transaction(async (tx) => {
    // Lock order: pipeline, then stage (the dispatcher and the result consumer agree).
    const pipelineId = await pipelineOfStage(tx, stageId);
    if (pipelineId !== null) await lockPipeline(tx, pipelineId);
    const stage = await lockStage(tx, stageId);
    if (!stage || stage.applicationId !== applicationId) throw new NotFound(`Stage ${stageId} not found.`);
    const decision = decideResume(stage, input.approved);
    switch (decision.kind) {
      case 'repeat':
        return null;
      case 'conflict':
        throw new DecisionConflict(stageId, decision.recorded);
      case 'not_waiting':
        throw new StageNotWaiting(stageId, stage.status);
      case 'apply': {
        const rejectionReason = input.rejectionReason ?? null;
        const rejectionLog = input.approved
          ? null
          : redactSecrets(rejectionLogMessage(rejectionReason), await sensitiveValues(tx, stage.pipelineId));
        const now = deps.clock();
        await recordApprovalDecision(tx, stage, { approved: input.approved, rejectionReason, now, rejectionLog });
        await refreshPipelineStatus(tx, stage.pipelineId, now, { requestDispatch: true });
        return stage;
      }
    }
  });
  if (outcome) {
    await announce(deps, {
      type: 'stage.resumed',
      applicationId,
      pipelineId: outcome.pipelineId,
      stageIds: [stageId],
      approved: input.approved,
    });
  }
}
