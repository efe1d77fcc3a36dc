import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import {
  confirmReplicated,
  isCluster,
  reopeningQueue,
  type RedisConnection,
} from './connection.js';
import {
  LEGACY_STAGE_RESULTS_QUEUE,
  RESULT_GROUP_JOB,
  RESULT_JOB_OPTIONS,
  resultJobId,
  resultReceiptsKey,
  stageResultsQueue,
  type StageResultGroup,
  type StageResultMessage,
} from './stage-results.js';

export interface StageResultsProducer {
  /**
   * Resolves once Redis confirmed the job and, with `minReplicasAck`, once that many replicas hold
   * it (else ReplicasNotConfirmed): only then may the gateway answer 202.
   */
  publish(message: StageResultMessage): Promise<void>;
  /**
   * The executions among `results` whose result for that attempt waits on the queue to be applied
   * (or is being applied): the receipt of a 202 that the sweeper honours (decision 0062).
   */
  waiting(
    results: readonly {
      applicationId: number;
      executionId: string;
      attempt: number;
      workerId: string | null;
    }[],
  ): Promise<Set<string>>;
  close(): Promise<void>;
}

export interface StageResultsProducerOptions {
  /** Replicas that must hold a result before publish resolves (REDIS_MIN_REPLICAS_ACK); 0: the primary's reply is enough. */
  minReplicasAck?: number;
  replicaAckTimeoutMs?: number;
  /**
   * How long a commit that follows another waits for more results to join it (RESULTS_COMMIT_LINGER_MS):
   * only under load, when results queued while a commit was under way. 0: at once.
   */
  commitLingerMs?: number;
}

/** The most results, and about the most bytes, one group carries. */
const GROUP_MAX_RESULTS = 64;
const GROUP_MAX_BYTES = 1 << 20;

/** About the bytes of a result message: its strings are nearly all of it. */
function resultMessageBytes(m: StageResultMessage): number {
  const r = m.result;
  let bytes = 512 + (r.result?.length ?? 0);
  for (const log of r.logs ?? []) bytes += 64 + log.message.length;
  for (const item of r.contextItems ?? [])
    bytes += 64 + item.key.length + (item.value?.length ?? 0);
  for (const stage of r.appendedStages ?? []) bytes += 256 + JSON.stringify(stage).length;
  return bytes;
}

interface Pending {
  message: StageResultMessage;
  bytes: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export function createStageResultsProducer(
  connection: RedisConnection,
  prefix: string,
  options: StageResultsProducerOptions = {},
): StageResultsProducer {
  const shards = new Map<string, ReturnType<typeof reopeningQueue<Queue>>>();
  const queueOf = (name: string) => {
    let queue = shards.get(name);
    if (!queue) {
      queue = reopeningQueue(
        () => new Queue(name, { connection, prefix, defaultJobOptions: RESULT_JOB_OPTIONS }),
      );
      shards.set(name, queue);
    }
    return queue.get();
  };
  const minReplicas = options.minReplicasAck ?? 0;
  const replicaTimeout = options.replicaAckTimeoutMs ?? 1000;
  const lingerMs = options.commitLingerMs ?? 0;

  const commit = async (name: string, messages: StageResultMessage[]) => {
    const queue = queueOf(name);
    const [only] = messages;
    if (messages.length === 1 && only) {
      const jobId = resultJobId(only.result.executionId, only.result.attempt, only.workerId);
      // A repeated post finds its job there already and waits for the replicas all the same.
      await queue.add('result', only, { jobId });
      await confirmReplicated(connection, queue.toKey(jobId), minReplicas, replicaTimeout);
      return;
    }
    const groupId = `g-${randomUUID()}`;
    const receipts = resultReceiptsKey(queue);
    const fields = messages.map((m) =>
      resultJobId(m.result.executionId, m.result.attempt, m.workerId),
    );
    try {
      await Promise.all([
        connection.hset(receipts, Object.fromEntries(fields.map((f) => [f, groupId]))),
        queue.add(RESULT_GROUP_JOB, { results: messages } satisfies StageResultGroup, {
          jobId: groupId,
        }),
      ]);
    } catch (err) {
      // Receipts of a group that may not exist would only read as "no receipt"; drop them anyway.
      void connection.hdel(receipts, ...fields).catch(() => undefined);
      throw err;
    }
    await confirmReplicated(connection, queue.toKey(groupId), minReplicas, replicaTimeout);
  };

  // Per shard: the results waiting for the commit under way to finish. One commit at a time per
  // shard, so a busy gateway's results ride together and an idle one's go at once (group commit).
  const pendingOf = new Map<string, { queued: Pending[]; committing: boolean }>();
  const drain = async (name: string, shard: { queued: Pending[]; committing: boolean }) => {
    shard.committing = true;
    let committed = false;
    try {
      while (shard.queued.length > 0) {
        // Results queued behind a commit mean load: a moment more makes their group bigger, and
        // each group costs Redis the same whatever it carries (decision 0125). Idle, a result goes at once.
        if (lingerMs > 0 && committed && shard.queued.length < GROUP_MAX_RESULTS)
          await new Promise((resolve) => setTimeout(resolve, lingerMs));
        committed = true;
        let bytes = 0;
        let n = 0;
        while (
          n < shard.queued.length &&
          n < GROUP_MAX_RESULTS &&
          (n === 0 || bytes + shard.queued[n]!.bytes <= GROUP_MAX_BYTES)
        ) {
          bytes += shard.queued[n]!.bytes;
          n += 1;
        }
        const group = shard.queued.splice(0, n);
        try {
          await commit(
            name,
            group.map((p) => p.message),
          );
          for (const p of group) p.resolve();
        } catch (err) {
          // Those queued behind a failed commit fail with it rather than each wait out its own
          // command timeout in turn (a frozen Redis would answer the k-th group after k timeouts).
          for (const p of [...group, ...shard.queued.splice(0)]) p.reject(err);
        }
      }
    } finally {
      shard.committing = false;
      if (shard.queued.length === 0) pendingOf.delete(name);
    }
  };

  return {
    publish(message) {
      // BullMQ sets a queue up on its first use and waits for Redis to do so: a gateway whose first
      // result comes during an outage would hold it until Redis is back. Fail fast, as producers do.
      if (connection.status !== 'ready')
        return Promise.reject(new Error(`Redis connection ${connection.status}`));
      const name = stageResultsQueue(message.applicationId);
      let shard = pendingOf.get(name);
      if (!shard) pendingOf.set(name, (shard = { queued: [], committing: false }));
      const queued = shard;
      return new Promise<void>((resolve, reject) => {
        queued.queued.push({ message, bytes: resultMessageBytes(message), resolve, reject });
        if (!queued.committing) void drain(name, queued);
      });
    },
    async waiting(results) {
      const found = new Set<string>();
      if (results.length === 0) return found;
      // The lease holder's job, and a job queued under the id without a worker (before decision 0117);
      // in the application's shard, and in the 0.5 queue where a result queued before the upgrade waits.
      const candidates = results.flatMap((r) =>
        [
          stageResultsQueue(r.applicationId),
          ...(isCluster(connection) ? [] : [LEGACY_STAGE_RESULTS_QUEUE]),
        ].flatMap((queue) => [
          ...(r.workerId === null
            ? []
            : [
                {
                  queue,
                  executionId: r.executionId,
                  id: resultJobId(r.executionId, r.attempt, r.workerId),
                },
              ]),
          { queue, executionId: r.executionId, id: resultJobId(r.executionId, r.attempt) },
        ]),
      );
      const byQueue = new Map<string, typeof candidates>();
      for (const c of candidates) byQueue.set(c.queue, [...(byQueue.get(c.queue) ?? []), c]);
      // One pipeline per queue: each queue is its own cluster slot.
      await Promise.all(
        [...byQueue].map(async ([name, list]) => {
          const queue = queueOf(name);
          const pipeline = connection.pipeline();
          for (const c of list) pipeline.exists(queue.toKey(c.id));
          // A grouped result has no job of its own: its receipt names its group's (decision 0125).
          pipeline.hmget(resultReceiptsKey(queue), ...list.map((c) => c.id));
          const answers = (await pipeline.exec()) ?? [];
          // Redis away is not "no result waits": the caller must not expire what it cannot check (decision 0120).
          const failed = answers.find(([err]) => err)?.[0];
          if (failed) throw failed;
          const groups = (answers[list.length]?.[1] ?? []) as (string | null)[];
          const pending = async (id: string) => {
            const state = await queue.getJobState(id);
            return state !== 'failed' && state !== 'completed' && state !== 'unknown';
          };
          // A job that exists may still have failed for good (malformed): only pending ones count.
          await Promise.all(
            list.map(async (c, i) => {
              const group = groups[i];
              if (answers[i]?.[1] !== 0 && (await pending(c.id))) found.add(c.executionId);
              else if (group && (await pending(group))) found.add(c.executionId);
            }),
          );
        }),
      );
      return found;
    },
    close: async () => {
      await Promise.all([...shards.values()].map((q) => q.close()));
    },
  };
}
