import type { Db } from '@po/db';
import type { Engine } from '@po/engine';
import type { StageNextPublisher, StageNextQueueState, StageResultsProducer } from '@po/queues';
import type { Logger } from '@po/telemetry';
import type { RedisLossDetector } from './redis-loss.js';

export interface DispatcherDeps {
  db: Db;
  engine: Engine;
  /** Republishing unconfirmed or lost StageNext messages. */
  publisher: StageNextPublisher;
  /** Whether accepted results still wait on stage-results. */
  results: Pick<StageResultsProducer, 'waiting'>;
  logger: Logger;
  /** Whether Redis lost writes since the last look: the lost-message walk then walks everything at once. */
  redisLoss: RedisLossDetector;
  /** The pause state and concurrency of StageNext queues in Redis (by worker-facing name), held to handler_settings (decision 0132). */
  queueSettings: {
    states(queues: readonly string[]): Promise<StageNextQueueState[]>;
    setPaused(queue: string, paused: boolean): Promise<void>;
    setConcurrency(queue: string, concurrency: number | null): Promise<void>;
  };
}
