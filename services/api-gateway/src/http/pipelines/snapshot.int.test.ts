// GET /pipelines/{pipelineId} is one consistent reading: a pipeline whose status, stage and
// context change together in one transaction is never shown half-changed (addendum §4, §8).
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlOf, statement } from '@po/db';
import { startGateway, type Gateway } from '../../testing/harness.js';

let gw: Gateway;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => {
  await gw?.close();
});

// Two states a one-stage pipeline really passes through (addendum §8 rules 3 and 4): its stage
// Running with the pipeline Running, or WaitingForApproval with the pipeline Paused. Each step
// also writes a generation number into the stage output and a context value.
const MOVE_STAGE = statement(
  'test_snapshot_move_stage',
  `UPDATE stages SET status = $2::text::"StageStatus", output = $3 WHERE pipeline_id = $1`,
);
const MOVE_PIPELINE = statement(
  'test_snapshot_move_pipeline',
  `UPDATE pipelines SET status = $2::text::"PipelineStatus", dispatched = true WHERE id = $1`,
);
const MOVE_CONTEXT = statement(
  'test_snapshot_move_context',
  `UPDATE context_items SET value = $2 WHERE pipeline_id = $1 AND key = 'generation'`,
);

const PAIRED: Record<string, string> = { Running: 'Running', WaitingForApproval: 'Paused' };

interface Reading {
  status: string;
  stages: { status: string; output: string | null }[];
  pipelineContextItems: { key: string; value: string }[];
}

/** What is impossible in a reading: a stage and pipeline status, or generations, that never coexisted. */
function tornParts(p: Reading): string[] {
  const stage = p.stages[0];
  const generation = p.pipelineContextItems.find((c) => c.key === 'generation')?.value;
  const parts: string[] = [];
  if (!stage) return ['no stage'];
  if (PAIRED[stage.status] !== p.status) parts.push(`stage ${stage.status} in a ${p.status} pipeline`);
  if (stage.output !== generation) parts.push(`output ${stage.output} with context ${generation}`);
  return parts;
}

describe('GET /pipelines/{pipelineId} under concurrent change', () => {
  it('never returns a stage and a pipeline status (or context) from different moments', async () => {
    const created = await gw.call('POST', '/pipelines', {
      json: {
        apiKey: gw.appA.key,
        name: 'snapshot',
        stages: [{ stageName: 'approve', stageHandlerName: 'handler' }],
        pipelineContextItems: [{ key: 'generation', value: '0' }],
      },
      key: null,
    });
    expect(created.status, created.text).toBe(200);
    const id = created.body.id as number;
    const sql = sqlOf(gw.db);

    let stop = false;
    let writes = 0;
    const writer = (async () => {
      for (let gen = 1; !stop; gen++) {
        const stageStatus = gen % 2 === 0 ? 'Running' : 'WaitingForApproval';
        await sql.transaction(async (tx) => {
          await tx.query(MOVE_STAGE, [id, stageStatus, String(gen)]);
          await tx.query(MOVE_CONTEXT, [id, String(gen)]);
          await tx.query(MOVE_PIPELINE, [id, PAIRED[stageStatus]]);
        });
        writes++;
      }
    })();
    // The first step makes the starting state one of the paired ones.
    while (writes === 0) await sleep(5);

    // Until 300 readings, or 8 s on a loaded machine; the old multi-statement read tore within a
    // handful of readings.
    const torn: string[] = [];
    const generations = new Set<string>();
    let reads = 0;
    const deadline = Date.now() + 8_000;
    const reader = async () => {
      while (reads < 300 && Date.now() < deadline && torn.length === 0) {
        const reply = await gw.call('GET', `/pipelines/${id}`);
        expect(reply.status, reply.text).toBe(200);
        const reading = reply.body as Reading;
        torn.push(...tornParts(reading));
        generations.add(String(reading.stages[0]?.output));
        reads++;
      }
    };
    await Promise.all([reader(), reader(), reader()]);
    stop = true;
    await writer;

    expect(torn, `after ${reads} readings and ${writes} writes`).toEqual([]);
    // The race was real: the readings saw the pipeline at many different moments.
    expect(generations.size, `${reads} readings`).toBeGreaterThanOrEqual(10);
  });
});
