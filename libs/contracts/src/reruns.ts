// POST /pipelines/{pipelineId}/rerun's optional body (issue 32, decision 0133): where the rerun
// starts, its first stage (the default, the behaviour before the body existed) or its failure.
import { enumOf, named } from './fragments.js';
import { compile, registerSchemas } from './validate.js';
import type { Validator } from './validate.js';

export const RERUN_FROM = ['start', 'failed'] as const;
export type RerunFromValue = (typeof RERUN_FROM)[number];

export interface RerunRequest {
  from?: RerunFromValue;
}

export const rerunRequestSchema = named(
  'RerunRequest',
  {
    from: enumOf(
      RERUN_FROM,
      '`start` (default): run every stage again; `failed`: carry over the stages that Completed, with their outputs, timings and logs, and run the rest',
    ),
  },
  { description: 'absent or empty: a rerun from the start' },
);

registerSchemas(rerunRequestSchema);

/** The body; unknown members are ignored and a null `from` is absent, as everywhere else. */
export const validateRerunRequest: Validator<RerunRequest> = compile(rerunRequestSchema);
