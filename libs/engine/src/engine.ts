import { setTimeout as sleep } from 'node:timers/promises';
import { Batcher, isTransientDbError, sqlOf, type Db, type Queryable } from '@po/db';
import type { PipelineEventsProducer, StageNextPublisher, StageResultMessage } from '@po/queues';
import { rememberSensitive, rememberSensitiveItems, traceparentOf, type Logger, type Span } from '@po/telemetry';
import type { ContextItem, StageNextJob } from '@po/contracts';
import { Batch, type EngineItem, type ItemOutcome } from './batch.js';
import { byQueue, stageNextMessage } from './messages.js';
import { lockPipelines, pipelinesOfStages, readPassStages, writePass, type PassStage } from './store.js';
import { addAppended, insertPassStages } from './steps/append.js';
import { candidates, plan } from './steps/plan.js';
import { readContexts, writeContexts, type ContextEntryRow } from './store-contexts.js';
import { admitBatch } from './flow-control.js';
import { republishLost, type LostMessage } from './republish.js';
import { INLINE_CONTEXT_MAX_BYTES, contextBytes, snapshotOf, writeSnapshots, type ContextSnapshot } from './context-snapshots.js';
import { recordApply, recordOutcome, recordPublished, startDispatchSpans } from './observe.js';

export interface EngineDeps {
  db: Db;
  publisher: StageNextPublisher;
  /** Delayed `pipeline.wake` events: a retry falls due on time, not on the next sweep. */
  events: PipelineEventsProducer;
  logger: Logger;
  random: () => number;
  /** APP_MAX_ACTIVE_STAGES: Pending + Running cap per application; 0 = none. */
  maxActiveStages: number;
}

/** The write found a row changed since the read (a concurrent writer won): the batch is retried. */
class ConcurrentChange extends Error {}

const ATTEMPTS = 5;
/** Tries of a StageNext publish after the commit, before the sweeper's net takes over. */
const PUBLISH_ATTEMPTS = 3;

interface Outgoing {
  queue: string;
  message: StageNextJob;
  /** Its key's turn (decision 0132): orders the job behind lighter keys' in the StageNext queue. */
  turn: number;
  /** When the change that made the stage ready was requested (dispatch-latency metric). */
  requestedAt: Date;
}

interface Committed {
  batch: Batch;
  outgoing: Outgoing[];
  /** The live context of each pipeline the messages were made for (real values). */
  contexts: ContextItem[][];
}

/**
 * The engine (decision 0061): applying results, ending expired executions and dispatcher passes are
 * one operation over a batch of pipelines, in one transaction — lock the pipelines in id order,
 * read their stages, decide in memory (libs/domain), write everything in one statement, commit, then
 * publish the StageNext messages of the stages it dispatched. result-consumer runs it for results,
 * pipeline-service for events, retries and the sweeper.
 */
export class Engine {
  constructor(private readonly deps: EngineDeps) {}

  /**
   * Runs the items as one batch and returns one outcome per item, in order. With skipLocked, items
   * of a pipeline another transaction holds are skipped (the sweeper comes back for them).
   */
  async run(input: readonly EngineItem[], options: { skipLocked?: boolean } = {}): Promise<ItemOutcome[]> {
    if (input.length === 0) return [];
    const started = Date.now();
    const items = await this.withPipelines(input);
    let committed: Committed | undefined;
    for (let attempt = 1; ; attempt += 1) {
      try {
        committed = await sqlOf(this.deps.db).transaction((tx) => this.decide(tx, items, options.skipLocked ?? false), { keyLookups: true });
        break;
      } catch (err) {
        if (attempt >= ATTEMPTS || !(err instanceof ConcurrentChange || isTransientDbError(err))) throw err;
        await sleep(5 * attempt + Math.floor(this.deps.random() * 10 * attempt));
      }
    }
    await this.afterCommit(items, committed, started);
    return committed.batch.outcomes;
  }

  /**
   * Runs passes inside the caller's open transaction `tx` (made with `keyLookups`), where the
   * pipelines were just created (decision 0106): locks, reads, decides and writes as `run` does,
   * without its retries — a failure is the caller's, whose transaction rolls back. Resolves with the
   * outcomes and what to do once that transaction has committed (publish, among others).
   */
  async runWithin(tx: Queryable, passes: readonly PassRequest[]): Promise<{ outcomes: ItemOutcome[]; committed: () => Promise<void> }> {
    const started = Date.now();
    const items: EngineItem[] = passes.map((p) => ({ kind: 'pass', pipelineId: p.pipelineId, cause: p.cause }));
    const decided = await this.decide(tx, items, false);
    return { outcomes: decided.batch.outcomes, committed: () => this.afterCommit(items, decided, started) };
  }

  /**
   * Publishes the message of a dispatch whose message Redis lost (the sweeper found it missing),
   * with the context as it is now; nothing when the execution is no longer the stage's Pending one.
   * The job id is the execution id, so while the job exists in any state this adds nothing.
   */
  async republish(executionId: string, stageId: number): Promise<boolean> {
    return (await this.republishMany([{ executionId, stageId }])).length === 1;
  }

  /** `republish` for many executions at once (the lost-message walk's pages, decision 0124): the execution ids published. */
  republishMany(lost: readonly LostMessage[]): Promise<string[]> {
    return republishLost(this.deps, lost);
  }

  /** Results queued before messages carried their pipeline are resolved here (one statement). */
  private async withPipelines(input: readonly EngineItem[]): Promise<EngineItem[]> {
    const missing = input.filter((i) => i.kind === 'result' && !(i.pipelineId > 0)).map((i) => (i as { message: StageResultMessage }).message.stageId);
    if (missing.length === 0) return [...input];
    const known = await pipelinesOfStages(sqlOf(this.deps.db), missing);
    return input.map((i) => (i.kind === 'result' && !(i.pipelineId > 0) ? { ...i, pipelineId: known.get(i.message.stageId) ?? 0 } : i));
  }

  private async decide(tx: Queryable, items: readonly EngineItem[], skipLocked: boolean): Promise<Committed> {
    const ids = [...new Set(items.map((i) => i.pipelineId).filter((id) => id > 0))].sort((a, b) => a - b);
    const { now, pipelines } = await lockPipelines(tx, ids, skipLocked);
    const locked = new Map(pipelines.map((p) => [p.id, p]));
    const stages = locked.size > 0 ? await readPassStages(tx, [...locked.keys()]) : new Map<number, PassStage[]>();
    // The context is read only for pipelines whose results change it or have log lines to redact.
    const contextIds = items
      .filter((i) => i.kind === 'result' && locked.has(i.pipelineId) && ((i.message.result.contextItems?.length ?? 0) > 0 || (i.message.result.logs?.length ?? 0) > 0))
      .map((i) => i.pipelineId);
    const contexts = contextIds.length > 0 ? await readContexts(tx, [...new Set(contextIds)]) : new Map<number, ContextEntryRow[]>();

    const batch = new Batch(now, locked, stages, contexts, this.deps.random);
    for (const item of items) batch.decide(item);
    const contextWrites = batch.contextWrites();
    if (contextWrites.length > 0) await writeContexts(tx, contextWrites, now);
    if (batch.appended.length > 0) addAppended(batch, await insertPassStages(tx, batch.appended, now));

    const { admitted, candidates: ready } = await admitBatch(tx, batch, () => candidates(batch), this.deps.maxActiveStages);
    plan(batch, ready, admitted);

    const stageWrites = batch.stageWrites();
    const dispatchedPipelines = [...new Set(batch.dispatches.map((d) => d.pipeline.id))];
    const written = await writePass(tx, {
      now,
      stages: stageWrites,
      ended: batch.ended,
      started: batch.dispatches.map((d) => ({ id: d.executionId, stageId: d.stage.id, applicationId: d.pipeline.applicationId })),
      pipelines: batch.pipelineWrites,
      logs: batch.logs,
      dispatchedStageIds: batch.dispatches.map((d) => d.stage.id),
      dispatchedPipelineIds: dispatchedPipelines,
    });
    if (written.stagesUpdated !== stageWrites.length) {
      throw new ConcurrentChange(`batch changed ${written.stagesUpdated} of ${stageWrites.length} stages`);
    }
    // Every execution a decision rests on must have ended here; an expiry whose lease was renewed
    // after the read did not, and the batch is decided again.
    for (const o of batch.outcomes) {
      const id = o.kind === 'result' && o.decision.applied ? o.stage?.execution?.id : o.kind === 'expiry' && o.expired ? o.stage.execution?.id : undefined;
      if (id !== undefined && !written.endedIds.has(id)) throw new ConcurrentChange(`execution ${id} was not ended`);
    }

    const publishedAt = new Date();
    // A context is shared by every message of its pipeline, and copied into each only while small:
    // a large one is written once as a snapshot the messages name (decision 0121), so a fan-out
    // costs memory in proportion to its stages, not to the context times the fan-out.
    const shown = new Map<number, ContextItem[]>();
    const snapshots = new Map<number, ContextSnapshot>();
    for (const d of batch.dispatches) {
      if (shown.has(d.pipeline.id)) continue;
      const live = batch.changedContext(d.pipeline.id) ?? written.context.get(d.pipeline.id) ?? [];
      const items = live.map((c) => ({ ...c, isDeleted: false }));
      shown.set(d.pipeline.id, items);
      if (contextBytes(items) > INLINE_CONTEXT_MAX_BYTES) snapshots.set(d.pipeline.id, snapshotOf(d.pipeline.id, d.pipeline.applicationId, items));
    }
    const outgoing = batch.dispatches.map((d) => {
      const snapshot = snapshots.get(d.pipeline.id);
      const { queue, message } = stageNextMessage({
        applicationId: d.pipeline.applicationId,
        pipelineId: d.pipeline.id,
        traceId: d.pipeline.traceId,
        stage: { ...d.stage, input: written.inputs.get(d.stage.id) ?? '' },
        executionId: d.executionId,
        context: snapshot ? [] : shown.get(d.pipeline.id)!,
        ...(snapshot ? { contextSnapshotId: snapshot.id } : {}),
        dispatchedAt: publishedAt,
      });
      return { queue, message, turn: d.turn, requestedAt: d.pipeline.dispatchRequestedAt ?? now };
    });
    await writeSnapshots(tx, [...snapshots.values()]);
    return { batch, outgoing, contexts: [...shown.values()] };
  }

  /**
   * Publishes the batch's StageNext messages once it has committed (decision 0121): one publish
   * per queue (several messages go as batch jobs of up to 32, decision 0127), all queues at once.
   * No broker call holds a row lock, and a worker never pulls a message whose rows it cannot see
   * yet. A publish that fails is tried again a few times; after that (or if this process dies in
   * between) the sweeper's lost-message walk republishes the dispatch from its row, so nothing waits
   * forever. The dispatch stands either way.
   */
  private async publish(outgoing: readonly Outgoing[]): Promise<boolean> {
    const turns = new Map(outgoing.filter((o) => o.turn > 0).map((o) => [o.message.executionId, o.turn]));
    const results = await Promise.allSettled([...byQueue(outgoing)].map(async ([queue, messages]) => {
      for (let attempt = 1; ; attempt += 1) {
        try {
          return await this.deps.publisher.publish(queue, messages, turns.size > 0 ? { turns } : {});
        } catch (err) {
          if (attempt >= PUBLISH_ATTEMPTS) throw err;
          await sleep(100 * 2 ** attempt);
        }
      }
    }));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) this.deps.logger.warn({ err: failed.reason }, 'StageNext messages not published; the sweeper republishes them');
    return !failed;
  }

  private async afterCommit(items: readonly EngineItem[], committed: Committed, started: number): Promise<void> {
    const { batch, outgoing } = committed;
    // The messages hold the real context values: the logger censors the sensitive ones from now on.
    for (const context of committed.contexts) rememberSensitiveItems(context);
    if (outgoing.length > 0) await this.publish(outgoing);
    const causes = new Map<number, string>();
    const spans: Span[] = [];
    items.forEach((item, i) => {
      const outcome = batch.outcomes[i]!;
      if (item.kind === 'result' && outcome.kind === 'result') {
        const stage = outcome.stage;
        const pipeline = stage ? batch.pipelines.get(stage.pipelineId) : undefined;
        if (!outcome.decision.applied) {
          this.deps.logger.warn(
            {
              stageId: item.message.stageId,
              executionId: item.message.result.executionId,
              attempt: item.message.result.attempt,
              workerId: item.message.workerId,
              reason: outcome.decision.reason,
            },
            'result discarded',
          );
        }
        if (item.message.result.contextItems) rememberSensitive(item.message.result.contextItems.filter((c) => c.isSensitive).map((c) => c.value ?? ''));
        const span = recordApply(item.message, stage && pipeline ? { ...stage, pipelineTraceId: pipeline.traceId } : undefined, outcome.decision, started);
        if (span) {
          spans.push(span);
          if (outcome.decision.applied) causes.set(item.pipelineId, traceparentOf(span));
        }
      } else if (item.kind === 'expiry' && outcome.kind === 'expiry' && outcome.expired) {
        const { stage } = outcome;
        this.deps.logger.warn(
          { pipelineId: stage.pipelineId, stageId: stage.id, executionId: item.executionId, code: outcome.code, outcome: stage.status },
          'execution expired',
        );
        recordOutcome(stage.handlerName, outcome.outcome, outcome.code);
      } else if (item.kind === 'pass' && item.cause && !causes.has(item.pipelineId)) {
        causes.set(item.pipelineId, item.cause);
      }
    });
    this.observeDispatches(batch, outgoing, causes);
    for (const span of spans) span.end();
    for (const p of batch.pipelineWrites) {
      if (p.nextPassAt === null) continue;
      const pipeline = batch.pipelines.get(p.id)!;
      try {
        await this.deps.events.publishDelayed({ type: 'pipeline.wake', applicationId: pipeline.applicationId, pipelineId: p.id }, p.nextPassAt.getTime() - Date.now());
      } catch (err) {
        // The pass request is durable (dispatch_requested_at): the sweep runs it when it is due.
        this.deps.logger.warn({ err, pipelineId: p.id }, 'retry wake-up not scheduled; the sweep will run the pass');
      }
    }
  }

  /** Dispatch spans (tracing on only) and the dispatch metrics of the messages the batch published. */
  private observeDispatches(batch: Batch, outgoing: readonly Outgoing[], causes: Map<number, string>): void {
    if (outgoing.length === 0) return;
    const spans = new Map<string, Span>();
    for (const [pipelineId, list] of groupBy(outgoing, (o) => o.message.pipelineId)) {
      const made = startDispatchSpans(list, batch.pipelines.get(pipelineId)!.traceId, causes.get(pipelineId), batch.now.getTime());
      made?.forEach((span, executionId) => spans.set(executionId, span));
    }
    for (const o of outgoing) recordPublished([o.message], o.requestedAt, spans);
  }
}

/** A dispatcher pass asked for one pipeline; `cause` is the traceparent the dispatch spans link to. */
export interface PassRequest {
  pipelineId: number;
  cause?: string;
}

/** Passes asked for one by one, run together while the engine is busy (group commit). */
export function createPassRunner(engine: Engine, options: { maxBatch: number; maxConcurrent: number }): Batcher<PassRequest, ItemOutcome> {
  return new Batcher((passes) => engine.run(passes.map((p) => ({ kind: 'pass', pipelineId: p.pipelineId, cause: p.cause }))), options);
}

function groupBy<T, K>(items: readonly T[], key: (t: T) => K): Map<K, T[]> {
  const out = new Map<K, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = out.get(k);
    if (list) list.push(item);
    else out.set(k, [item]);
  }
  return out;
}
