// po pipelines list | get | watch | cancel | rerun | create | logs
// (cancel and rerun take an id, or filters for a bulk operation: decision 0133)
import { randomUUID } from 'node:crypto';
import {
  PIPELINE_STATUSES,
  type BulkDryRun,
  type BulkFilter,
  type IdempotentPipelineCreateRequest,
  type OperationView,
  type PipelineListQuery,
  type PipelineStatus,
} from '@po/client';
import { Argument, Command, Option } from 'commander';
import { contextFor, type Context, type Environment } from '../context.js';
import { EXIT, UsageError } from '../errors.js';
import {
  collect,
  collectRaw,
  durationValue,
  limitValue,
  parseMoment,
  positiveInt,
  readObjectFile,
  stringifyStageInputs,
} from '../input.js';
import { printPage, readPages } from '../listing.js';
import { logLines, pipelineDetails, pipelineTable } from '../render.js';
import { describeChange, exitCodeFor, watchPipeline } from '../watch.js';

const idArgument = () => new Argument('<id>', 'pipeline id').argParser(positiveInt);
const optionalIdArgument = () =>
  new Argument(
    '[id]',
    'pipeline id; without it, the filters choose the pipelines (a bulk operation)',
  ).argParser(positiveInt);

interface FilterOptions {
  status?: string[];
  name?: string;
  namePrefix?: string;
  keyword?: string[];
  schedule?: string;
  handler?: string;
  since?: string;
  until?: string;
}

/** The filters of `list`, shared by a bulk rerun or cancel. */
const filterOptions = (cmd: Command) =>
  cmd
    .addOption(
      new Option(
        '--status <status>',
        `only these statuses (repeat, or separate with commas): ${PIPELINE_STATUSES.join(', ')}`,
      ).argParser(collect),
    )
    .option('--name <prefix>', 'only names starting with this (case-insensitive)')
    .option('--name-prefix <prefix>', 'the same as --name')
    .option(
      '--keyword <KEY[=VALUE]>',
      'only pipelines with this keyword (repeat: all must match)',
      collectRaw,
    )
    .option('--schedule <name>', 'only pipelines created by this schedule')
    .option('--handler <stageHandlerName>', 'only pipelines with a stage of this handler')
    .option('--since <when>', 'created after: a duration back from now (24h, 7d) or a date-time')
    .option('--until <when>', 'created before: a duration back from now or a date-time');

function checkStatuses(statuses: string[]): PipelineStatus[] {
  const unknown = statuses.filter((s) => !PIPELINE_STATUSES.includes(s as PipelineStatus));
  if (unknown.length > 0)
    throw new UsageError(
      `unknown status ${unknown.join(', ')}; one of ${PIPELINE_STATUSES.join(', ')}`,
    );
  return statuses as PipelineStatus[];
}

function queryOf(ctx: Context, opts: FilterOptions): Omit<PipelineListQuery, 'limit' | 'cursor'> {
  const statuses = checkStatuses(opts.status ?? []);
  return {
    ...(statuses.length ? { status: statuses } : {}),
    ...((opts.name ?? opts.namePrefix) !== undefined ? { name: opts.name ?? opts.namePrefix } : {}),
    ...(opts.keyword?.length ? { keyword: opts.keyword } : {}),
    ...(opts.schedule !== undefined ? { scheduleName: opts.schedule } : {}),
    ...(opts.handler !== undefined ? { stageHandlerName: opts.handler } : {}),
    ...(opts.since !== undefined ? { createdAfter: parseMoment(opts.since, ctx.now()) } : {}),
    ...(opts.until !== undefined ? { createdBefore: parseMoment(opts.until, ctx.now()) } : {}),
  };
}

/** The bulk filter of the options; a usage error when there is none, or an id beside them. */
function bulkFilterOf(
  ctx: Context,
  id: number | undefined,
  opts: FilterOptions,
): BulkFilter | null {
  const query = queryOf(ctx, opts);
  const filter: BulkFilter = {
    ...query,
    ...(query.keyword ? { keyword: [...query.keyword] } : {}),
  } as BulkFilter;
  const given = Object.keys(filter).length > 0;
  if (id !== undefined && given) throw new UsageError('give a pipeline id or filters, not both');
  if (id === undefined && !given)
    throw new UsageError(
      'give a pipeline id, or filters (--status, --name, …) for a bulk operation',
    );
  return id === undefined ? filter : null;
}

const bulkOptions = (cmd: Command) =>
  cmd
    .option('--dry-run', 'bulk: show how many pipelines the filters match, and change nothing')
    .addOption(
      new Option('--max-per-second <n>', 'bulk: pipelines a second at most (default 50)').argParser(
        positiveInt,
      ),
    );

const watchOptions = (cmd: Command) =>
  cmd
    .addOption(
      new Option('--interval <duration>', 'time between two readings')
        .argParser(durationValue)
        .default(1000, '1s'),
    )
    .addOption(
      new Option('--timeout <duration>', 'stop watching after this long (exit 6)').argParser(
        durationValue,
      ),
    );

/** Watches until terminal; returns the exit code for how it ended. */
async function watch(
  ctx: Context,
  id: number,
  options: { interval: number; timeout?: number },
): Promise<number> {
  // Progress is for people: on stdout in table mode, on stderr when stdout carries JSON.
  const progress = ctx.output === 'json' ? ctx.io.err : ctx.io.out;
  const { pipeline, timedOut } = await watchPipeline(ctx.client, id, {
    intervalMs: options.interval,
    timeoutMs: options.timeout,
    now: ctx.now,
    onChange: (change, at) => progress(describeChange(change, at)),
    onTransientError: (err) =>
      ctx.io.err(`po: reading pipeline ${id} failed, trying again: ${err.message}`),
  });
  if (ctx.output === 'json') ctx.io.out(JSON.stringify(pipeline, null, 2));
  if (timedOut) {
    ctx.io.err(`po: pipeline ${id} is still ${pipeline.status} after the --timeout`);
    return EXIT.TIMEOUT;
  }
  if (ctx.output !== 'json') progress(`pipeline ${id} ${pipeline.status}`);
  return exitCodeFor(pipeline.status);
}

interface BulkOptions {
  dryRun?: boolean;
  maxPerSecond?: number;
}

const bulkRequest = (opts: BulkOptions) => ({
  ...(opts.dryRun ? { dryRun: true } : {}),
  ...(opts.maxPerSecond !== undefined ? { maxPerSecond: opts.maxPerSecond } : {}),
});

function printBulk(ctx: Context, kind: string, answer: OperationView | BulkDryRun): void {
  ctx.print(answer, (a) =>
    'sample' in a
      ? `${a.matched} pipelines match (dry run, nothing changed)${a.sample.length ? `: ${a.sample.join(', ')}${a.matched > a.sample.length ? ', …' : ''}` : ''}`
      : `operation ${a.id}: bulk ${kind} of ${a.matched} pipelines at most ${a.maxPerSecond} a second (po operations show ${a.id})`,
  );
}

export function pipelinesCommand(env: Environment, setExit: (code: number) => void): Command {
  const pipelines = new Command('pipelines')
    .alias('pipeline')
    .description('list, read, watch, create, cancel and rerun pipelines');

  filterOptions(pipelines.command('list').description('list pipelines, newest first, with filters'))
    .addOption(
      new Option('--limit <n>', 'at most this many pipelines').argParser(limitValue).default(50),
    )
    .option('--all', 'every matching pipeline, page after page')
    .option('--cursor <cursor>', 'continue from a previous listing')
    .action(async (opts: ListOptions, cmd: Command) => {
      const ctx = contextFor(cmd, env);
      const query = queryOf(ctx, opts);
      const page = await readPages((p) => ctx.client.pipelines.listPage({ ...query, ...p }), opts);
      printPage(ctx, page, 'pipelines', pipelineTable);
    });

  pipelines
    .command('get')
    .description('show a pipeline and its stages')
    .addArgument(idArgument())
    .action(async (id: number, _opts: unknown, cmd: Command) => {
      const ctx = contextFor(cmd, env);
      ctx.print(await ctx.client.pipelines.get(id), pipelineDetails);
    });

  watchOptions(
    pipelines
      .command('watch')
      .description(
        'follow a pipeline stage by stage until it ends; the exit code tells how (0 Completed, 4 Failed, 5 Cancelled)',
      )
      .addArgument(idArgument()),
  ).action(async (id: number, opts: { interval: number; timeout?: number }, cmd: Command) => {
    setExit(await watch(contextFor(cmd, env), id, opts));
  });

  bulkOptions(
    filterOptions(
      pipelines
        .command('cancel')
        .description(
          'cancel a pipeline and its unfinished stages; with filters instead of an id, every pipeline they match',
        )
        .addArgument(optionalIdArgument()),
    ),
  ).action(async (id: number | undefined, opts: FilterOptions & BulkOptions, cmd: Command) => {
    const ctx = contextFor(cmd, env);
    const filter = bulkFilterOf(ctx, id, opts);
    if (filter) {
      printBulk(
        ctx,
        'cancel',
        await ctx.client.pipelines.bulkCancel({ filter, ...bulkRequest(opts) }),
      );
      return;
    }
    ctx.print(
      await ctx.client.pipelines.cancel(id!),
      (p) => `pipeline ${p.id} ${p.status} (${p.stageStatuses.join(', ')})`,
    );
  });

  watchOptions(
    bulkOptions(
      filterOptions(
        pipelines
          .command('rerun')
          .description(
            'create a new pipeline from a finished one; with filters instead of an id, rerun every pipeline they match (a bulk operation, from the failure by default)',
          )
          .addArgument(optionalIdArgument())
          .addOption(
            new Option(
              '--from <where>',
              'start: every stage again; failed: carry over what Completed',
            ).choices(['start', 'failed']),
          )
          .option('--watch', 'then watch the new pipeline (exit code as for watch)'),
      ),
    ),
  ).action(
    async (
      id: number | undefined,
      opts: FilterOptions &
        BulkOptions & {
          from?: 'start' | 'failed';
          watch?: boolean;
          interval: number;
          timeout?: number;
        },
      cmd: Command,
    ) => {
      const ctx = contextFor(cmd, env);
      const filter = bulkFilterOf(ctx, id, opts);
      if (filter) {
        const request = { filter, ...bulkRequest(opts), ...(opts.from ? { from: opts.from } : {}) };
        printBulk(ctx, 'rerun', await ctx.client.pipelines.bulkRerun(request));
        return;
      }
      const rerun = await ctx.client.pipelines.rerun(id!, opts.from ? { from: opts.from } : {});
      if (opts.watch) {
        ctx.io.err(`pipeline ${rerun.id} created, rerunning ${id}`);
        setExit(await watch(ctx, rerun.id, opts));
        return;
      }
      ctx.print(
        rerun,
        (p) => `pipeline ${p.id} created, rerunning ${p.rerunOf ?? id} (${p.name}, ${p.status})`,
      );
    },
  );

  watchOptions(
    pipelines
      .command('create')
      .description(
        'create a pipeline from a JSON or YAML definition (idempotent: see --idempotency-key)',
      )
      .requiredOption(
        '-f, --file <path>',
        'the definition: name, stages, keywords, context (`-` reads stdin)',
      )
      .option(
        '--idempotency-key <key>',
        "overrides the file's idempotencyKey; without either, a new key is made",
      )
      .option('--watch', 'then watch the pipeline (exit code as for watch)'),
  )
    .addHelpText(
      'after',
      `
A stage's input that is not a string (a YAML mapping, say) is sent as compact JSON.
The same idempotency key with the same definition returns the existing pipeline.`,
    )
    .action(
      async (
        opts: {
          file: string;
          idempotencyKey?: string;
          watch?: boolean;
          interval: number;
          timeout?: number;
        },
        cmd: Command,
      ) => {
        const ctx = contextFor(cmd, env);
        const definition = stringifyStageInputs(await readObjectFile(opts.file));
        const fileKey =
          typeof definition.idempotencyKey === 'string' ? definition.idempotencyKey : undefined;
        const idempotencyKey = opts.idempotencyKey ?? fileKey ?? `po-${randomUUID()}`;
        const request = {
          ...definition,
          idempotencyKey,
        } as unknown as IdempotentPipelineCreateRequest;
        const result = await ctx.client.pipelines.createIdempotent(request);
        const said = result.created
          ? `pipeline ${result.pipeline.id} created (${result.pipeline.name}, idempotency key ${idempotencyKey})`
          : `pipeline ${result.pipeline.id} already existed for idempotency key ${idempotencyKey} (${result.pipeline.status})`;
        if (opts.watch) {
          ctx.io.err(said);
          setExit(await watch(ctx, result.pipeline.id, opts));
          return;
        }
        ctx.print(result, () => said);
      },
    );

  pipelines
    .command('logs')
    .description("print a stage's logs, oldest first")
    .addArgument(idArgument())
    .argument('<stage>', 'the stage: its id or its name')
    .addOption(
      new Option('--limit <n>', 'at most this many lines').argParser(limitValue).default(1000),
    )
    .option('--all', 'every line')
    .action(
      async (id: number, stage: string, opts: { limit: number; all?: boolean }, cmd: Command) => {
        const ctx = contextFor(cmd, env);
        const pipeline = await ctx.client.pipelines.get(id);
        const byId = /^\d+$/.test(stage)
          ? pipeline.stages.filter((s) => s.id === Number(stage))
          : [];
        const matches = byId.length ? byId : pipeline.stages.filter((s) => s.name === stage);
        if (matches.length === 0) {
          throw new UsageError(
            `pipeline ${id} has no stage ${stage}; its stages: ${pipeline.stages.map((s) => `${s.name} (${s.id})`).join(', ')}`,
          );
        }
        if (matches.length > 1) {
          throw new UsageError(
            `pipeline ${id} has ${matches.length} stages named ${stage}: use an id (${matches.map((s) => s.id).join(', ')})`,
          );
        }
        const stageId = matches[0]!.id;
        const page = await readPages(
          (p) => ctx.client.pipelines.stageLogsPage(id, stageId, p),
          opts,
        );
        printPage(ctx, page, 'log lines', logLines);
      },
    );

  return pipelines;
}

interface ListOptions extends FilterOptions {
  limit: number;
  all?: boolean;
  cursor?: string;
}
