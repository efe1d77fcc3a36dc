import type { Db } from '@po/db';
import type { Engine } from '@po/engine';
import type { StageNextPublisher, StageResultsProducer } from '@po/queues';
import type { Logger } from '@po/telemetry';

export interface DispatcherDeps {
  db: Db;
  engine: Engine;
  /** Republishing unconfirmed or lost StageNext messages. */
  publisher: StageNextPublisher;
  /** Whether accepted results still wait on stage-results. */
  results: Pick<StageResultsProducer, 'waiting'>;
  logger: Logger;
}
