import {
  NotFound,
  PipelineNotFailed,
  PipelineNotTerminal,
  isTerminalPipeline,
  normaliseOptions,
  type NewPipeline,
  type StageOptions,
} from '@po/domain';
import {
  lockPipelineForRerun,
  readPipeline,
  readRerunSource,
  statement,
  type PipelineRecord,
  type Queryable,
  type RerunFrom,
  type RerunSource,
} from '@po/db';
import { createPipeline } from './create.js';

/**
 * POST /pipelines/{pipelineId}/rerun and the bulk rerun's items (decisions 0089, 0133): a new
 * pipeline from a terminal one, created in the caller's transaction by the creation statement of
 * POST /pipelines. The caller dispatches it after commit like any creation.
 *
 * From the start it repeats the definition as created. From the failure it repeats every stage
 * and the context as the run left it, and every stage that Completed in the original is carried
 * over: Completed with the original's output, timings and logs (copies, marked), never delivered.
 * The engine's first pass then finds the stages after them ready, as it would have in the
 * original.
 */
export interface Rerun {
  applicationId: number;
  pipelineId: number;
  from: RerunFrom;
  traceId: string;
  now: Date;
  /** Read the new pipeline back after its carry-over, for a response (default true); a bulk rerun needs only its id. */
  readBack?: boolean;
}

export interface RerunOutcome {
  pipeline: NewPipeline;
  /** The new pipeline; as created (its stages NotStarted) when `readBack` was false. */
  record: PipelineRecord;
  /** Stages carried over, Completed, from the original (0 from the start). */
  carriedOver: number;
}

export async function rerunPipeline(tx: Queryable, r: Rerun): Promise<RerunOutcome> {
  const original = await lockPipelineForRerun(tx, r.pipelineId);
  if (!original || original.applicationId !== r.applicationId) throw new NotFound(`Pipeline ${r.pipelineId} not found.`);
  if (!isTerminalPipeline(original.status)) throw new PipelineNotTerminal(r.pipelineId, original.status);
  if (r.from === 'failed' && original.status === 'Completed') throw new PipelineNotFailed(r.pipelineId);
  const source = await readRerunSource(tx, r.pipelineId, r.from);
  if (!source) throw new Error(`pipeline ${r.pipelineId} vanished under its lock`);
  const pipeline = rerunDefinition(source, r.applicationId, r.traceId);
  const created = await createPipeline(tx, pipeline, r.now, null, { rerunOf: r.pipelineId });
  if (!created) throw new Error('a rerun inserted nothing');
  if (r.from === 'start') return { pipeline, record: created, carriedOver: 0 };
  const pairs = source.stages.flatMap((s, i) => (s.completed ? [{ from: s.sourceId, to: created.stages[i]!.id }] : []));
  if (pairs.length === 0) return { pipeline, record: created, carriedOver: 0 };
  await carryOver(tx, created.id, pairs);
  if (r.readBack === false) return { pipeline, record: created, carriedOver: pairs.length };
  const record = await readPipeline(tx, created.id);
  if (!record) throw new Error(`rerun ${created.id} vanished in its own transaction`);
  return { pipeline, record, carriedOver: pairs.length };
}

/**
 * The pipeline to create. Stored rows already passed creation's rules (dependsOn names earlier
 * stages, which the stages read still are, in the same order). A sensitive item's value is left
 * empty here: the statement copies it.
 */
function rerunDefinition(source: RerunSource, applicationId: number, traceId: string): NewPipeline {
  return {
    applicationId,
    name: source.name,
    traceId,
    policies: source.policies,
    idempotencyKey: null,
    scheduleId: null,
    priority: source.priority,
    stages: source.stages.map(({ sourceId: _id, completed: _done, ...s }) => {
      const stored = s.options as StageOptions;
      return { ...s, options: normaliseOptions(stored, stored.runNextIfFailed, source.priority) };
    }),
    contextItems: source.context.map((c) => ({ key: c.key, value: c.value ?? '', valueType: c.valueType, isSensitive: c.isSensitive })),
    keywords: source.keywords,
  };
}

/**
 * The new run's stages that Completed in the original become Completed here with its output and
 * timings, naming the stage they come from, and get copies of its logs, marked: one statement.
 * They have no execution, so nothing of them is ever delivered.
 */
const CARRY_OVER = statement(
  'pipeline_rerun_carry_over',
  `WITH pairs AS (
     SELECT * FROM unnest($2::bigint[], $3::bigint[]) AS m(from_id, to_id)
   ), carried AS (
     UPDATE stages n SET status = 'Completed', output = o.output, started_at = o.started_at,
                         finished_at = o.finished_at, carried_over_from = o.id
     FROM pairs JOIN stages o ON o.id = pairs.from_id
     WHERE n.id = pairs.to_id AND n.pipeline_id = $1::bigint AND o.status = 'Completed'
     RETURNING n.id, o.id AS from_id
   )
   INSERT INTO stage_logs (stage_id, pipeline_id, message, log_level, created, carried_over)
   SELECT carried.id, $1::bigint, l.message, l.log_level, l.created, true
   FROM carried JOIN stage_logs l ON l.stage_id = carried.from_id
   ORDER BY carried.id, l.created, l.id`,
);

async function carryOver(tx: Queryable, pipelineId: number, pairs: readonly { from: number; to: number }[]): Promise<void> {
  await tx.query(CARRY_OVER, [pipelineId, pairs.map((p) => p.from), pairs.map((p) => p.to)]);
}
