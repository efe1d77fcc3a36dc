import { limits, utf8Bytes } from '@po/contracts';
import type { StageCreate, StageInfo, StageOptions, StageOptionsInput } from '@po/contracts';
import type { FieldError } from './errors.js';

// Wire types: @po/contracts defines them (StageOptionsInput as a client sends it, validated and
// without nulls; StageOptions with every default of addendum §4 applied, as stored and returned).
export type { Backoff, StageOptions, StageOptionsInput } from '@po/contracts';
export { utf8Bytes };

export const MAX_STAGES_PER_PIPELINE: number = limits.stagesPerPipeline;
export const MAX_STAGE_INPUT_BYTES: number = limits.stageInputBytes;

/** StageCreate: a stage inside a pipeline definition; `input` is a string. */
export type StageCreateInput = StageCreate;

/** StageInfo / WorkerAppendedStage: `input` is any JSON value. */
export type StageInfoInput = StageInfo;

type StageCommon = StageCreateInput | StageInfoInput;

/** A stage ready to be stored at the end of a pipeline. */
export interface NewStage {
  name: string;
  handlerName: string;
  description: string | null;
  input: string;
  options: StageOptions;
  policies: Record<string, unknown>[] | null;
  isEvent: boolean;
}

/** Stored options may carry nulls (timeOut, maxRetryInterval, runAsUser); they mean "not set". */
type OptionsLike = { [K in keyof StageOptionsInput]?: StageOptionsInput[K] | null };

/** The priority of stages that set none, and of pipelines that set none (issue 31). */
export const DEFAULT_PRIORITY = 3;

/**
 * `pipelinePriority` is the default of a stage without its own (a pipeline's priority at creation
 * and append). Stored options already carry the effective priority, and keep it.
 */
export function normaliseOptions(options: OptionsLike | undefined, runNextIfFailed: boolean, pipelinePriority = DEFAULT_PRIORITY): StageOptions {
  const o = options ?? {};
  const concurrencyKey = o.concurrencyKey ?? null;
  return {
    runNextIfFailed,
    retryInterval: o.retryInterval ?? 0,
    maxRetries: o.maxRetries ?? 0,
    timeOut: o.timeOut ?? null,
    retryOnErrorCodes: o.retryOnErrorCodes ?? [],
    backoff: o.backoff ?? 'fixed',
    maxRetryInterval: o.maxRetryInterval ?? null,
    jitter: o.jitter ?? false,
    dependsOn: o.dependsOn ?? [],
    runInParallelWith: o.runInParallelWith ?? [],
    failIfOutputEmpty: o.failIfOutputEmpty ?? false,
    notifyOnFailure: o.notifyOnFailure ?? false,
    runAsUser: o.runAsUser ?? null,
    concurrencyKey,
    // A limit without a key is kept so checkAddedStages can refuse it by name.
    concurrencyLimit: o.concurrencyLimit ?? (concurrencyKey === null ? null : 1),
    priority: o.priority ?? pipelinePriority,
  };
}

function common(stage: StageCommon, runNextIfFailed: boolean, input: string, pipelinePriority: number): NewStage {
  return {
    name: stage.stageName,
    handlerName: stage.stageHandlerName,
    description: stage.description ?? null,
    input,
    options: normaliseOptions(stage.options, runNextIfFailed, pipelinePriority),
    policies: stage.policies ?? null,
    isEvent: stage.isEvent ?? false,
  };
}

/** StageCreate: options.runNextIfFailed ?? runNextIfFailed ?? false (addendum §6). */
export function stageFromCreate(stage: StageCreateInput, pipelinePriority = DEFAULT_PRIORITY): NewStage {
  return common(stage, stage.options?.runNextIfFailed ?? stage.runNextIfFailed ?? false, stage.input ?? '', pipelinePriority);
}

/**
 * StageInfo: options.runNextIfFailed ?? runNextIfCurrentFailed ?? runNextIfFailed ?? false, and
 * input unwrapping: a string is kept, another non-null value becomes compact JSON, null becomes "".
 */
export function stageFromInfo(stage: StageInfoInput, pipelinePriority = DEFAULT_PRIORITY): NewStage {
  const runNext =
    stage.options?.runNextIfFailed ?? stage.runNextIfCurrentFailed ?? stage.runNextIfFailed ?? false;
  return common(stage, runNext, inputString(stage.input), pipelinePriority);
}

export function inputString(input: unknown): string {
  if (input === undefined || input === null) return '';
  if (typeof input === 'string') return input;
  return JSON.stringify(input);
}

/**
 * Rules that need the pipeline as a whole (addendum §6): the stage count cap, the input byte limit
 * after unwrapping, and dependsOn names that must match a stage earlier in position.
 */
export function checkAddedStages(
  existingNames: readonly string[],
  added: readonly NewStage[],
  pointer = '/stages',
): FieldError[] {
  const errors: FieldError[] = [];
  if (existingNames.length + added.length > MAX_STAGES_PER_PIPELINE) {
    errors.push({
      field: pointer,
      message: `a pipeline may have at most ${MAX_STAGES_PER_PIPELINE} stages (it has ${existingNames.length})`,
    });
  }
  const earlier = new Set(existingNames);
  added.forEach((stage, i) => {
    if (utf8Bytes(stage.input) > MAX_STAGE_INPUT_BYTES) {
      errors.push({ field: `${pointer}/${i}/input`, message: `must be at most ${MAX_STAGE_INPUT_BYTES} bytes` });
    }
    if (stage.options.concurrencyKey === null && stage.options.concurrencyLimit !== null) {
      errors.push({ field: `${pointer}/${i}/options/concurrencyLimit`, message: 'needs a concurrencyKey (a limit applies to the stages of one key)' });
    }
    stage.options.dependsOn.forEach((name, j) => {
      if (!earlier.has(name)) {
        errors.push({
          field: `${pointer}/${i}/options/dependsOn/${j}`,
          message: `must name a stage earlier in the pipeline ("${name}" does not)`,
        });
      }
    });
    earlier.add(stage.name);
  });
  return errors;
}
