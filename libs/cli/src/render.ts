// Human output: aligned tables and "key  value" blocks. `--output json` bypasses all of this.
import type {
  HandlerView,
  OperationView,
  PipelineResponse,
  PipelineSummary,
  Schedule,
  ScheduleRun,
  StageLog,
  WebhookDeliveryView,
  WebhookView,
  WorkerEventRecord,
  WorkerSummary,
} from '@po/client';

export type Cell = string | number | boolean | null | undefined;

function cell(value: Cell): string {
  if (value === null || value === undefined || value === '') return '-';
  // One line per row: a newline in a message would break the columns.
  return String(value).replace(/\r?\n/g, ' ⏎ ');
}

/** Columns padded to their widest cell, two spaces apart, no trailing blanks. */
export function table(headers: string[], rows: Cell[][]): string {
  const text = [headers, ...rows.map((r) => r.map(cell))];
  const widths = headers.map((_, i) => Math.max(...text.map((r) => [...(r[i] ?? '')].length)));
  return text
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c + ' '.repeat(widths[i]! - [...c].length)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** `key  value` lines, keys aligned; entries whose value is undefined are left out. */
export function details(entries: [string, Cell][]): string {
  const shown = entries.filter(([, v]) => v !== undefined);
  const width = Math.max(...shown.map(([k]) => k.length));
  return shown.map(([k, v]) => `${k.padEnd(width)}  ${cell(v)}`).join('\n');
}

/** API times without milliseconds: `2025-03-01T12:00:00Z`. */
export function time(iso: string | null | undefined): string | null {
  if (!iso) return null;
  return iso.replace(/\.\d{3}Z$/, 'Z');
}

/** `Completed:2 Running:1` from per-status counts (statuses without stages left out). */
export function stageCounts(counts: Partial<Record<string, number>> | undefined): string {
  return Object.entries(counts ?? {})
    .filter(([, n]) => (n ?? 0) > 0)
    .map(([status, n]) => `${status}:${n}`)
    .join(' ');
}

export function pipelineTable(items: PipelineSummary[]): string {
  return table(
    ['ID', 'NAME', 'STATUS', 'STAGES', 'CREATED', 'FINISHED', 'SCHEDULE'],
    items.map((p) => [
      p.id,
      p.name,
      p.status,
      stageCounts(p.stageStatusCounts),
      time(p.createdAt),
      time(p.finishedAt),
      p.scheduleName,
    ]),
  );
}

export function pipelineDetails(p: PipelineResponse): string {
  const head = details([
    ['pipeline', p.id],
    ['name', p.name],
    ['status', p.status],
    ['created', time(p.createdAt)],
    ['finished', time(p.finishedAt)],
    ['trace id', p.traceId],
    ['idempotency key', p.idempotencyKey ?? undefined],
    ['rerun of', p.rerunOf ?? undefined],
    [
      'keywords',
      p.pipelineKeywords.length
        ? p.pipelineKeywords.map((k) => `${k.key}=${k.value}`).join(', ')
        : undefined,
    ],
    [
      'context',
      p.pipelineContextItems.length
        ? p.pipelineContextItems.map((c) => `${c.key}=${c.value}`).join(', ')
        : undefined,
    ],
  ]);
  const stages = table(
    ['STAGE', 'NAME', 'HANDLER', 'STATUS', 'ATTEMPT', 'STARTED', 'FINISHED', 'ERROR'],
    p.stages.map((s) => [
      s.id,
      s.name,
      s.stageHandlerName,
      s.status,
      s.attempt,
      time(s.startedAt),
      time(s.finishedAt),
      s.lastErrorCode,
    ]),
  );
  return `${head}\n\n${stages}`;
}

function scheduleWhen(s: Schedule): string {
  if (s.kind === 'Cron')
    return `${s.cronExpression ?? ''}${s.timeZone && s.timeZone !== 'UTC' ? ` (${s.timeZone})` : ''}`;
  if (s.kind === 'Interval') return `every ${s.intervalSeconds ?? '?'}s`;
  return `once at ${time(s.runAt) ?? '?'}`;
}

export function scheduleTable(items: Schedule[]): string {
  return table(
    ['NAME', 'STATUS', 'KIND', 'WHEN', 'NEXT RUN', 'LAST RUN', 'LAST STATUS', 'HEALTH'],
    items.map((s) => [
      s.name,
      s.status,
      s.kind,
      scheduleWhen(s),
      time(s.nextRunAt),
      time(s.lastRunAt),
      s.lastRunStatus,
      s.health.state,
    ]),
  );
}

export function scheduleDetails(s: Schedule): string {
  const h = s.health;
  return details([
    ['schedule', s.name],
    ['id', s.id],
    ['status', s.status],
    ['kind', s.kind],
    ['when', scheduleWhen(s)],
    ['next run', time(s.nextRunAt)],
    ['last run', time(s.lastRunAt)],
    ['last status', s.lastRunStatus],
    ['last pipeline', s.lastPipelineId],
    ['overlap', s.overlapPolicy],
    ['catch-up', `${s.catchupPolicy} (max ${s.catchupMax})`],
    ['jitter', `${s.jitterSeconds}s`],
    [
      'definition',
      `v${s.definitionVersion}: ${s.definition.name} (${s.definition.stages.map((st) => st.stageName).join(', ')})`,
    ],
    [
      'health',
      `${h.state}: ${h.total} runs of the last ${h.windowSize}, completed ${h.completed}, failed ${h.failed}, cancelled ${h.cancelled}, running ${h.running}, skipped ${h.skipped}`,
    ],
    ['created', time(s.createdAt)],
    ['updated', time(s.updatedAt)],
  ]);
}

export function runTable(items: ScheduleRun[]): string {
  return table(
    [
      'RUN',
      'TRIGGER',
      'STATUS',
      'SCHEDULED FOR',
      'CREATED',
      'PIPELINE',
      'PIPELINE STATUS',
      'REASON',
    ],
    items.map((r) => [
      r.id,
      r.trigger,
      r.status,
      time(r.scheduledFor),
      time(r.createdAt),
      r.pipelineId,
      r.pipelineStatus,
      r.reason,
    ]),
  );
}

export function workerTable(items: WorkerSummary[]): string {
  return table(
    ['WORKER', 'INSTANCE', 'NAME', 'STATUS', 'HANDLERS', 'LAST HEARTBEAT', 'SESSION EXPIRES'],
    items.map((w) => [
      w.workerId,
      w.instanceId,
      w.workerName,
      w.status,
      w.handlers.join(','),
      time(w.lastHeartbeatAt),
      time(w.sessionExpiresAt),
    ]),
  );
}

export function workerEventTable(items: WorkerEventRecord[]): string {
  return table(
    ['ID', 'AT', 'KIND', 'PIPELINE', 'STAGE', 'MESSAGE'],
    items.map((e) => [e.id, time(e.at), e.kind, e.pipelineId, e.stageId, e.message]),
  );
}

export function logLines(items: StageLog[]): string {
  return items.map((l) => `${time(l.created)}  ${l.logLevel.padEnd(11)}  ${l.message}`).join('\n');
}

/** A wait in whole units: `45s`, `12m05s`, `3h20m`, `2d04h`. */
export function waited(seconds: number | null | undefined): string | null {
  if (seconds === null || seconds === undefined) return null;
  const s = Math.floor(seconds);
  const two = (n: number) => String(n).padStart(2, '0');
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${two(s % 60)}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h${two(Math.floor(s / 60) % 60)}m`;
  return `${Math.floor(s / 86_400)}d${two(Math.floor(s / 3600) % 24)}h`;
}

/** `5 at once, 2.5/s`, or `-` without limits. */
function handlerLimits(h: HandlerView): string | null {
  const parts = [
    h.maxConcurrent === null ? null : `${h.maxConcurrent} at once`,
    h.maxPerSecond === null ? null : `${h.maxPerSecond}/s`,
  ].filter((p) => p !== null);
  return parts.length === 0 ? null : parts.join(', ');
}

export function handlerTable(items: HandlerView[]): string {
  return table(
    ['HANDLER', 'PAUSED', 'RUNNING', 'BACKLOG', 'THROTTLED', 'OLDEST WAIT', 'LIMITS'],
    items.map((h) => [
      h.name,
      h.paused ? 'yes' : 'no',
      h.running,
      h.backlog,
      h.throttled,
      waited(h.oldestWaitingSeconds),
      handlerLimits(h),
    ]),
  );
}

export function handlerDetails(h: HandlerView): string {
  return details([
    ['handler', h.name],
    ['paused', h.paused ? 'yes' : 'no'],
    ['max concurrent', h.maxConcurrent ?? 'no limit'],
    ['max per second', h.maxPerSecond ?? 'no limit'],
    ['running', h.running],
    ['backlog', `${h.backlog} (throttled ${h.throttled}, pending ${h.pending})`],
    ['oldest wait', waited(h.oldestWaitingSeconds)],
    ['settings', h.configured ? `updated ${time(h.updatedAt) ?? '-'}` : 'defaults (none stored)'],
  ]);
}

export function operationDetails(o: OperationView): string {
  return details([
    [
      'operation',
      `${o.id} (bulk ${o.kind}${o.from ? ` from ${o.from === 'failed' ? 'the failure' : 'the start'}` : ''})`,
    ],
    ['status', o.status],
    ['filter', JSON.stringify(o.filter)],
    ['progress', `${o.done} done, ${o.failed} failed, of ${o.matched} matched`],
    ['pace', `at most ${o.maxPerSecond} a second`],
    ['created', time(o.createdAt) ?? '-'],
    ['finished', time(o.finishedAt) ?? '-'],
    ...o.failures.map((f): [string, string] => [`failed ${f.pipelineId}`, f.reason]),
  ]);
}

export function webhookTable(items: WebhookView[]): string {
  return table(
    ['WEBHOOK', 'ENABLED', 'URL', 'EVENTS'],
    items.map((w) => [w.name, w.enabled ? 'yes' : 'no', w.url, w.events.join(',')]),
  );
}

export function webhookDetails(w: WebhookView & { secret?: string }): string {
  return details([
    ['webhook', w.name],
    ['url', w.url],
    ['events', w.events.join(', ')],
    ['enabled', w.enabled ? 'yes' : 'no'],
    ['created', time(w.createdAt)],
    ['updated', time(w.updatedAt)],
    ...(w.secret
      ? ([['secret', `${w.secret}  (shown once: keep it now)`]] as [string, Cell][])
      : []),
  ]);
}

export function deliveryTable(items: WebhookDeliveryView[]): string {
  return table(
    ['ID', 'EVENT', 'STATUS', 'ATTEMPTS', 'LAST CODE', 'NEXT ATTEMPT', 'CREATED', 'LAST ERROR'],
    items.map((d) => [
      d.id,
      d.eventType,
      d.status,
      d.attempts,
      d.lastResponseCode,
      time(d.nextAttemptAt),
      time(d.createdAt),
      d.lastError,
    ]),
  );
}
