import type { Db } from '@po/db';
import type { PipelineEventsProducer, StageNextPublisher } from '@po/queues';
import type { Logger } from '@po/telemetry';

export interface DispatcherDeps {
  db: Db;
  publisher: StageNextPublisher;
  events: PipelineEventsProducer;
  logger: Logger;
  clock: () => Date;
  random: () => number;
  /** APP_MAX_ACTIVE_STAGES: Pending + Running cap per application; 0 = none. */
  maxActiveStages: number;
}
