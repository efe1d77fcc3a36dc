// The Limits table of api-spec.md and the limits the addendum adds, in one place.
// "characters" are Unicode code points; "bytes" are UTF-8 bytes of the string value.

export const limits = {
  pipelineNameChars: 255,
  stagesPerPipeline: 100,
  stageNameChars: 255,
  stageHandlerNameChars: 300,
  stageDescriptionChars: 255,
  stageInputBytes: 262_144,
  pipelineKeywords: 64,
  keywordKeyChars: 300,
  keywordValueChars: 300,
  contextItems: 64,
  contextKeyChars: 300,
  contextValueBytes: 65_536,
  traceIdChars: 36,
  /** StageOptions.concurrencyKey and concurrencyLimit (issue 31). */
  concurrencyKeyChars: 255,
  concurrencyLimitMax: 10_000,
  /** PUT /handlers/{name} maxConcurrent and maxPerSecond (issue 31). */
  handlerMaxConcurrentMax: 1_000_000,
  handlerMaxPerSecondMax: 100_000,
  idempotencyKeyChars: 200,
  scheduleNameChars: 200,
  cronExpressionChars: 200,
  intervalSecondsMin: 10,
  intervalSecondsMax: 31_536_000,
  catchupMaxMin: 1,
  catchupMaxMax: 1000,
  jitterSecondsMax: 3600,
  /** Ticks one POST /schedules/{name}/backfill may cover (issue 11). */
  backfillTicks: 1000,
  pageSizeMin: 1,
  pageSizeMax: 200,
  pageSizeDefault: 50,
  resultBytes: 262_144,
  resultRequestBytes: 327_680,
  resultLogs: 100,
  resultContextItems: 64,
  errorCodeChars: 200,
  rejectionReasonChars: 4000,
  waitSecondsMax: 20,
  /** An ackToken in a result (decision 0098): pull tokens are 32 characters; room to change them. */
  deliveryTokenChars: 256,
  workerEventsMaxBatchDefault: 100,
  instanceIdChars: 200,
  workerNameChars: 200,
  workerHandlers: 100,
  sdkVersionChars: 100,
  hostnameChars: 255,
  workerMetadataBytes: 16_384,
  eventMessageChars: 4000,
  eventDataBytes: 16_384,
  shutdownReasonChars: 1000,
  logMessageBytes: 65_536,
  logLevelChars: 32,
  logKeywords: 64,
} as const;

// Request body limits per route (decision 0080). Each is the largest body whose declared fields
// are all at their maxima, counting a "character" as 4 UTF-8 bytes (so text that is mostly ASCII
// keeps room for its escapes) and leaving OBJECT_ROOM per object for member names, numbers,
// punctuation and whitespace. Unknown members are accepted but get no room of their own. A route
// whose body holds free-form members without a byte limit (pipeline creation, append, schedule
// PUT) has no limit of its own here: API_MAX_BODY_BYTES, which fits every such body, applies.
// API_MAX_BODY_BYTES also caps every limit below.

const utf8 = (chars: number): number => chars * 4;
const OBJECT_ROOM = 1024;
/** A valid API key is `pos_` and 43 characters; more room than that only serves an invalid one. */
const API_KEY_ROOM = 256;

export const bodyLimits = {
  /**
   * Bodies of short fields only: resume (rejectionReason, 4000 characters), lookup, cancel, pull,
   * ack, lease, heartbeat and shutdown.
   */
  small: 65_536,
  /** POST /logs (anonymous): the message, a level, a key and 64 keywords. */
  log:
    limits.logMessageBytes +
    utf8(limits.logLevelChars) +
    API_KEY_ROOM +
    limits.logKeywords * (utf8(limits.keywordKeyChars + limits.keywordValueChars) + OBJECT_ROOM) +
    OBJECT_ROOM,
  /** POST /workers/bootstrap: four names, the handler list and the metadata. */
  workerBootstrap:
    utf8(limits.instanceIdChars + limits.workerNameChars + limits.sdkVersionChars + limits.hostnameChars) +
    limits.workerHandlers * (utf8(limits.stageHandlerNameChars) + 8) +
    limits.workerMetadataBytes +
    OBJECT_ROOM,
  /** POST /schedules/{name}/trigger: an input of at most 262144 bytes, with room for its escapes. */
  scheduleTrigger: 2 * limits.stageInputBytes + OBJECT_ROOM,
  /**
   * POST /schedules/{name}/backfill: the same input, plus two date-times and a policy, which the
   * object room covers (the same limit as a trigger).
   */
  scheduleBackfill: 2 * limits.stageInputBytes + OBJECT_ROOM,
  /** POST /stages/{stageId}/result (api-spec Limits). */
  result: limits.resultRequestBytes,
  /** POST /workers/events with a batch of at most `maxBatch` events (WORKER_EVENTS_MAX_BATCH). */
  workerEvents: (maxBatch: number): number =>
    maxBatch * (limits.eventDataBytes + utf8(limits.eventMessageChars) + OBJECT_ROOM) + OBJECT_ROOM,
} as const;
