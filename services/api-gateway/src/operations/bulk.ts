import {
  BULK_OPERATION_MAX_ITEMS,
  BULK_SAMPLE_SIZE,
  OPERATION_FAILURES_SHOWN,
  type BulkDryRun,
  type BulkFilter,
  type OperationView,
  type PipelineSearchQuery,
  type ValidBulkRequest,
} from '@po/contracts';
import {
  cancelOperation as cancelStored,
  countMatches,
  createOperation,
  readOperation,
  readOperationFailures,
  type OperationKind,
  type OperationRecord,
} from '@po/db';
import { NotFound, OperationEnded, OperationRunning, ValidationFailed } from '@po/domain';
import type { Deps } from '../deps.js';
import { pipelineFilterOf } from '../pipelines/search.js';

/**
 * POST /pipelines/bulk-rerun and bulk-cancel (decision 0133): a dry run counts the filter's
 * matches; a real one creates the operation with its matches, now, in one transaction, and
 * pipeline-service's runner applies them at the operation's pace. GET and cancel read and stop it.
 */

/** The filter as the operation shows it: GET /pipelines' parameters, normalised. */
function shownFilter(q: PipelineSearchQuery): BulkFilter {
  const f: BulkFilter = {};
  if (q.status.length > 0) f.status = q.status;
  if (q.name !== undefined) f.name = q.name;
  if (q.keyword.length > 0) f.keyword = q.keyword.map((k) => (k.value === null ? k.key : `${k.key}=${k.value}`));
  if (q.scheduleName !== undefined) f.scheduleName = q.scheduleName;
  if (q.createdAfter !== undefined) f.createdAfter = q.createdAfter;
  if (q.createdBefore !== undefined) f.createdBefore = q.createdBefore;
  if (q.stageHandlerName !== undefined) f.stageHandlerName = q.stageHandlerName;
  return f;
}

const tooMany = (matched: number) =>
  ValidationFailed.at('/filter', `matches more than ${BULK_OPERATION_MAX_ITEMS} pipelines (${matched} or more): narrow it`);

export async function startBulk(deps: Deps, applicationId: number, kind: OperationKind, body: ValidBulkRequest): Promise<{ dryRun: BulkDryRun } | { operation: OperationView }> {
  const filter = pipelineFilterOf(applicationId, body.filter);
  if (body.dryRun) {
    const counted = await deps.sql.transaction((tx) => countMatches(tx, filter, BULK_OPERATION_MAX_ITEMS, BULK_SAMPLE_SIZE), { readOnly: true });
    if (counted.matched > BULK_OPERATION_MAX_ITEMS) throw tooMany(counted.matched);
    return { dryRun: counted };
  }
  const created = await deps.sql.transaction(async (tx) => {
    const r = await createOperation(tx, {
      kind,
      filter,
      filterJson: shownFilter(body.filter),
      rerunFrom: kind === 'rerun' ? body.from : null,
      maxPerSecond: body.maxPerSecond,
      now: deps.clock(),
    });
    if ('running' in r) throw new OperationRunning(kind, r.running);
    // Rolls the operation back with its items.
    if (r.matched > BULK_OPERATION_MAX_ITEMS) throw tooMany(r.matched);
    return r;
  });
  return { operation: view(created, []) };
}

export async function getOperation(deps: Deps, applicationId: number, id: number): Promise<OperationView> {
  const op = await readOperation(deps.sql, applicationId, id);
  if (!op) throw new NotFound(`Operation ${id} not found.`);
  return view(op, await readOperationFailures(deps.sql, id, OPERATION_FAILURES_SHOWN));
}

export async function cancelOperation(deps: Deps, applicationId: number, id: number): Promise<OperationView> {
  const cancelled = await cancelStored(deps.sql, applicationId, id, deps.clock());
  if (!cancelled) {
    const op = await readOperation(deps.sql, applicationId, id);
    if (!op) throw new NotFound(`Operation ${id} not found.`);
    throw new OperationEnded(id, op.status);
  }
  return view(cancelled, await readOperationFailures(deps.sql, id, OPERATION_FAILURES_SHOWN));
}

function view(op: OperationRecord, failures: OperationView['failures']): OperationView {
  return {
    id: op.id,
    kind: op.kind,
    status: op.status,
    filter: op.filter as BulkFilter,
    from: op.kind === 'rerun' ? (op.rerunFrom as OperationView['from']) : null,
    maxPerSecond: op.maxPerSecond,
    matched: op.matched,
    done: op.done,
    failed: op.failed,
    failures,
    createdAt: op.createdAt.toISOString(),
    finishedAt: op.finishedAt ? op.finishedAt.toISOString() : null,
  };
}
