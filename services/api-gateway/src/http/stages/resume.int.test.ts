// POST /stages/{stageId}/resume (api-spec "Stage statuses"; addendum §7 approval rows, §13 resume
// and redaction).
import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem } from '@po/testing';
import {
  compile,
  pipelineResponseSchema,
} from '@po/contracts';
import { startGateway, type Gateway, type Reply } from '../../testing/harness.js';
import { PIPELINE_EVENTS_QUEUE } from '@po/queues';

let gw: Gateway;
let events: Queue;
beforeAll(async () => {
  gw = await startGateway();
  events = new Queue(PIPELINE_EVENTS_QUEUE, { connection: gw.redis, prefix: gw.prefix });
});
afterAll(async () => {
  await events?.close();
  await gw?.close();
});

const pipelineShape = compile(pipelineResponseSchema, { normalise: false });
function expectNoContent(reply: Reply): void {
  expect(reply.status, reply.text).toBe(204);
  expect(reply.text).toBe('');
}

const secret = `approval-secret-${randomUUID()}`;

/** A pipeline of two stages whose first stage waits for approval (put there directly). */
async function waitingStage(
  key = gw.appA.key,
): Promise<{ pipelineId: number; stageId: number; otherStageId: number }> {
  const reply = await gw.call('POST', '/pipelines', {
    key: null,
    json: {
      apiKey: key,
      name: 'approval',
      stages: [
        { stageName: 'approve me', stageHandlerName: 'h' },
        { stageName: 'after', stageHandlerName: 'h' },
      ],
      pipelineContextItems: [
        { key: 'token', value: secret, isSensitive: true },
        { key: 'region', value: 'eu-west' },
      ],
    },
  });
  expect(reply.status, reply.text).toBe(200);
  const [first, second] = reply.body.stages as { id: number }[];
  await gw.db.stage.update({
    where: { id: BigInt(first!.id) },
    data: { status: 'WaitingForApproval', output: 'handler output' },
  });
  return { pipelineId: reply.body.id, stageId: first!.id, otherStageId: second!.id };
}

type StageView = Record<string, unknown> & {
  id: number;
  logs: { message: string; logLevel: string }[];
};

async function readStage(pipelineId: number, stageId: number, key = gw.appA.key) {
  const reply = await gw.call('GET', `/pipelines/${pipelineId}`, { key });
  expect(reply.status).toBe(200);
  const checked = pipelineShape(reply.body);
  expect(checked.ok ? [] : checked.errors).toEqual([]);
  const stage = (reply.body.stages as StageView[]).find((s) => s.id === stageId);
  if (!stage) throw new Error(`stage ${stageId} is not in pipeline ${pipelineId}`);
  return stage;
}

const resume = (stageId: number, json: unknown, key?: string) =>
  gw.call('POST', `/stages/${stageId}/resume`, { json, ...(key ? { key } : {}) });

async function resumedEvents(pipelineId: number) {
  const jobs = await events.getJobs([
    'waiting',
    'delayed',
    'active',
    'completed',
    'failed',
    'prioritized',
  ]);
  return jobs
    .map((j) => j.data as { type: string; pipelineId: number })
    .filter((e) => e.type === 'stage.resumed' && e.pipelineId === pipelineId);
}

describe('POST /stages/{stageId}/resume', () => {
  it('approving a WaitingForApproval stage answers 204 and completes it, keeping its output', async () => {
    const { pipelineId, stageId } = await waitingStage();
    const before = Date.now();
    expectNoContent(await resume(stageId, { approved: true }));
    const stage = await readStage(pipelineId, stageId);
    expect(stage).toMatchObject({
      status: 'Completed',
      isTerminal: true,
      output: 'handler output',
      failureCount: 0,
      lastErrorCode: null,
    });
    expect(Date.parse(stage.finishedAt as string)).toBeGreaterThanOrEqual(before - 1000);
  });

  it('publishes stage.resumed with the stage id and the decision', async () => {
    const approvedOne = await waitingStage();
    const rejectedOne = await waitingStage();
    await resume(approvedOne.stageId, { approved: true });
    await resume(rejectedOne.stageId, { approved: false });
    expect(await resumedEvents(approvedOne.pipelineId)).toEqual([
      expect.objectContaining({
        applicationId: gw.appA.id,
        pipelineId: approvedOne.pipelineId,
        stageIds: [approvedOne.stageId],
        approved: true,
      }),
    ]);
    expect(await resumedEvents(rejectedOne.pipelineId)).toEqual([
      expect.objectContaining({
        applicationId: gw.appA.id,
        pipelineId: rejectedOne.pipelineId,
        stageIds: [rejectedOne.stageId],
        approved: false,
      }),
    ]);
  });

  it('the same decision again is a 204 with no change; the opposite one is a 409 decision_conflict', async () => {
    const { pipelineId, stageId } = await waitingStage();
    expectNoContent(await resume(stageId, { approved: true }));
    const afterFirst = await readStage(pipelineId, stageId);
    expectNoContent(await resume(stageId, { approved: true }));
    expectProblem(
      await resume(stageId, { approved: false, rejectionReason: 'too late' }),
      409,
      'decision_conflict',
    );
    expect(await readStage(pipelineId, stageId)).toEqual(afterFirst);
    expect(await resumedEvents(pipelineId)).toHaveLength(1);
  });

  it('a repeated rejection is a 204 that changes nothing (its rejectionReason is ignored); approving afterwards is a 409', async () => {
    const { pipelineId, stageId } = await waitingStage();
    expectNoContent(await resume(stageId, { approved: false, rejectionReason: 'first reason' }));
    expectNoContent(await resume(stageId, { approved: false, rejectionReason: 'second reason' }));
    expectProblem(await resume(stageId, { approved: true }), 409, 'decision_conflict');
    const stage = await readStage(pipelineId, stageId);
    expect(stage.failureCount).toBe(1);
    expect(stage.logs.map((l) => l.message)).toEqual(['Rejected: first reason']);
  });

  it('rejection fails the stage: lastErrorCode REJECTED, failureDisposition terminal, failureCount 1, a Warning log "Rejected: {reason}"', async () => {
    const { pipelineId, stageId } = await waitingStage();
    expectNoContent(
      await resume(stageId, { approved: false, rejectionReason: 'budget not approved' }),
    );
    const stage = await readStage(pipelineId, stageId);
    expect(stage).toMatchObject({
      status: 'Failed',
      isTerminal: true,
      lastErrorCode: 'REJECTED',
      failureDisposition: 'terminal',
      failureCount: 1,
      hasFailureHistory: true,
      retryAttempt: 0,
    });
    expect(stage.lastFailedAt).not.toBeNull();
    expect(stage.finishedAt).toBe(stage.lastFailedAt);
    expect(stage.logs).toEqual([
      expect.objectContaining({
        message: 'Rejected: budget not approved',
        logLevel: 'Warning',
        stageId,
      }),
    ]);
  });

  it('a rejection without a reason (omitted or null) logs "Rejected"', async () => {
    for (const json of [{ approved: false }, { approved: false, rejectionReason: null }]) {
      const { pipelineId, stageId } = await waitingStage();
      expectNoContent(await resume(stageId, json));
      expect((await readStage(pipelineId, stageId)).logs).toEqual([
        expect.objectContaining({ message: 'Rejected', logLevel: 'Warning' }),
      ]);
    }
  });

  it('a sensitive context value inside the rejection reason is redacted in the stage log', async () => {
    const { pipelineId, stageId } = await waitingStage();
    expectNoContent(
      await resume(stageId, {
        approved: false,
        rejectionReason: `key ${secret} leaked in eu-west`,
      }),
    );
    const stage = await readStage(pipelineId, stageId);
    expect(stage.logs.map((l) => l.message)).toEqual([
      'Rejected: key [REDACTED] leaked in eu-west',
    ]);
    const stored = await gw.db.stageLog.findMany({ where: { stageId: BigInt(stageId) } });
    expect(stored.map((l) => l.message)).toEqual(['Rejected: key [REDACTED] leaked in eu-west']);
    expect(gw.logLines.filter((line) => line.includes(secret))).toEqual([]);
  });

  it('a stage that is not waiting and has no recorded decision is a 409 stage_not_waiting', async () => {
    const { pipelineId, otherStageId } = await waitingStage();
    for (const approved of [true, false])
      expectProblem(await resume(otherStageId, { approved }), 409, 'stage_not_waiting');
    expect((await readStage(pipelineId, otherStageId)).status).toBe('NotStarted');
    // A stage that reached a terminal state without a decision refuses too.
    await gw.db.stage.update({
      where: { id: BigInt(otherStageId) },
      data: { status: 'Cancelled', finishedAt: new Date() },
    });
    expectProblem(await resume(otherStageId, { approved: true }), 409, 'stage_not_waiting');
  });

  it("another application's stage is a 404 and stays waiting", async () => {
    const { pipelineId, stageId } = await waitingStage(gw.appB.key);
    expectProblem(await resume(stageId, { approved: true }), 404, 'not_found');
    expect((await readStage(pipelineId, stageId, gw.appB.key)).status).toBe('WaitingForApproval');
  });

  it('an unknown stage is a 404; an invalid stage id is a 400 at stageId', async () => {
    expectProblem(await resume(9007199254740991, { approved: true }), 404, 'not_found');
    for (const id of ['0', '01', '-1', 'abc', '9007199254740992']) {
      expectProblem(
        await gw.call('POST', `/stages/${id}/resume`, { json: { approved: true } }),
        400,
        'validation_failed',
        ['stageId'],
      );
    }
  });

  it('a missing or non-boolean approved is a 400 at /approved', async () => {
    const { pipelineId, stageId } = await waitingStage();
    for (const json of [
      {},
      { approved: 'true' },
      { approved: 1 },
      { approved: null },
      { rejectionReason: 'no decision' },
    ]) {
      expectProblem(await resume(stageId, json), 400, 'validation_failed', ['/approved']);
    }
    expect((await readStage(pipelineId, stageId)).status).toBe('WaitingForApproval');
  });

  it('rejectionReason may have 4000 characters; 4001 or a non-string is a 400 at /rejectionReason', async () => {
    const { pipelineId, stageId } = await waitingStage();
    expectProblem(
      await resume(stageId, { approved: false, rejectionReason: 'r'.repeat(4001) }),
      400,
      'validation_failed',
      ['/rejectionReason'],
    );
    expectProblem(
      await resume(stageId, { approved: false, rejectionReason: 17 }),
      400,
      'validation_failed',
      ['/rejectionReason'],
    );
    expect((await readStage(pipelineId, stageId)).status).toBe('WaitingForApproval');
    expectNoContent(await resume(stageId, { approved: false, rejectionReason: '😀'.repeat(4000) }));
    expect((await readStage(pipelineId, stageId)).logs.map((l) => l.message)).toEqual([
      `Rejected: ${'😀'.repeat(4000)}`,
    ]);
  });
});
