// The handler context: stage details, input, pipeline context, and the buffers (logs, context
// changes, appended stages) that travel with the result.
import { awaitApproval } from './approval.js';
import { StageError } from './errors.js';
import { LIMITS } from './protocol.js';
import type {
  AppendedStage,
  ContextItemUpdate,
  PullJobResponse,
  StageResultLog,
} from './protocol.js';
import type { HandlerContext, SetContextOptions, StageDetails, StageLogLevel } from './types.js';
import { nowIso, truncate } from './util.js';

/** What a handler produced besides its return value. */
export interface Collected {
  /** At most LIMITS.resultLogs lines; later ones are only counted. */
  readonly logs: StageResultLog[];
  droppedLogs: number;
  readonly contextItems: Map<string, ContextItemUpdate>;
  readonly appendedStages: AppendedStage[];
}

export function createCollected(): Collected {
  return { logs: [], droppedLogs: 0, contextItems: new Map(), appendedStages: [] };
}

export function addLog(collected: Collected, message: unknown, level: unknown): void {
  if (collected.logs.length >= LIMITS.resultLogs) {
    collected.droppedLogs += 1;
    return;
  }
  const logLevel =
    typeof level === 'string' && level.length >= 1 && level.length <= LIMITS.logLevelChars
      ? level
      : 'Information';
  collected.logs.push({ message: String(message), logLevel, created: nowIso() });
}

function checkKey(key: unknown, method: string): string {
  if (
    typeof key !== 'string' ||
    key.length === 0 ||
    Array.from(key).length > LIMITS.contextKeyChars
  ) {
    throw new TypeError(
      `${method}: key must be a string of 1..${LIMITS.contextKeyChars} characters`,
    );
  }
  return key;
}

function putContext(collected: Collected, update: ContextItemUpdate): void {
  const { contextItems } = collected;
  if (!contextItems.has(update.key) && contextItems.size >= LIMITS.resultContextItems) {
    throw new RangeError(`at most ${LIMITS.resultContextItems} context changes per result`);
  }
  contextItems.delete(update.key); // keep the latest change last
  contextItems.set(update.key, update);
}

function checkStage(stage: unknown, index: number): AppendedStage {
  const s = stage as Partial<AppendedStage> | null;
  if (
    typeof s !== 'object' ||
    s === null ||
    typeof s.stageName !== 'string' ||
    s.stageName === '' ||
    typeof s.stageHandlerName !== 'string' ||
    s.stageHandlerName === ''
  ) {
    throw new TypeError(`appendStages: item ${index} needs a stageName and a stageHandlerName`);
  }
  return { ...(s as AppendedStage) };
}

export interface ContextInit {
  delivery: PullJobResponse;
  handler: string;
  attempt: number;
  signal: AbortSignal;
  collected: Collected;
  traceparent?: string;
}

export function createContext(init: ContextInit): HandlerContext {
  const { delivery, collected } = init;
  const m = delivery.payload;
  const values: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const item of m.pipelineContextItems) {
    if (!item.isDeleted) values[item.key] = item.value;
  }
  const stage: StageDetails = Object.freeze({
    applicationId: m.applicationId,
    pipelineId: m.pipelineId,
    stageId: m.stageId,
    stageName: m.stageName,
    handler: init.handler,
    executionId: m.executionId,
    attempt: init.attempt,
    previousAttempts: m.previousAttempts,
    traceId: m.traceId,
    spanId: m.spanId,
    options: m.options,
    timeOutSeconds: m.timeOutSeconds,
    dispatchedAt: m.dispatchedAt,
    queue: delivery.queue,
    messageId: delivery.messageId,
  });

  return {
    input: m.input,
    stage,
    context: values,
    contextItems: Object.freeze([...m.pipelineContextItems]),
    signal: init.signal,
    headers: delivery.headers,
    traceparent: init.traceparent,

    json<T = unknown>(fallback?: T): T {
      if (m.input.trim() === '' && fallback !== undefined) return fallback;
      try {
        return JSON.parse(m.input) as T;
      } catch (err) {
        const why =
          m.input.trim() === '' ? 'the stage input is empty' : 'the stage input is not valid JSON';
        throw new StageError('VALIDATION_ERROR', why, { retryable: false, cause: err });
      }
    },

    log(message: string, level: StageLogLevel = 'Information'): void {
      addLog(collected, message, level);
    },

    setContext(key: string, value: unknown, options: SetContextOptions = {}): void {
      checkKey(key, 'setContext');
      if (value === undefined)
        throw new TypeError('setContext: value is undefined; use deleteContext');
      const serialised = typeof value === 'string' ? value : JSON.stringify(value);
      if (serialised === undefined) throw new TypeError('setContext: value cannot be serialised');
      const update: ContextItemUpdate = {
        key,
        value: serialised,
        isSensitive: options.sensitive === true,
      };
      if (options.valueType !== undefined) update.valueType = options.valueType;
      putContext(collected, update);
      values[key] = serialised;
    },

    deleteContext(key: string): void {
      checkKey(key, 'deleteContext');
      putContext(collected, { key, isDeleted: true });
      delete values[key];
    },

    appendStages(stages: AppendedStage | readonly AppendedStage[]): void {
      const list: readonly unknown[] = Array.isArray(stages) ? stages : [stages];
      if (collected.appendedStages.length + list.length > LIMITS.appendedStages) {
        throw new RangeError(`at most ${LIMITS.appendedStages} appended stages per result`);
      }
      const checked = list.map((s, i) => checkStage(s, collected.appendedStages.length + i));
      collected.appendedStages.push(...checked);
    },

    awaitApproval(result?: unknown) {
      return awaitApproval(result);
    },
  };
}

/** A short, single-line description of a thrown value for the stage logs. */
export function errorMessage(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return truncate(message, 4000);
}
