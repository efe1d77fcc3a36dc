// po schedules list | get | apply | pause | resume | archive | trigger | runs | backfill
import type { ScheduleBackfillRequest, ScheduleStatus, ScheduleUpsertRequest } from '@po/client';
import { Command, Option } from 'commander';
import { contextFor, type Environment } from '../context.js';
import { UsageError } from '../errors.js';
import { limitValue, parseMoment, readObjectFile, stringifyStageInputs } from '../input.js';
import { printPage, readPages } from '../listing.js';
import { runTable, scheduleDetails, scheduleTable, time } from '../render.js';

const STATUSES: ScheduleStatus[] = ['Active', 'Paused', 'Archived'];
const listOptions = (cmd: Command, noun: string) =>
  cmd
    .addOption(
      new Option('--limit <n>', `at most this many ${noun}`).argParser(limitValue).default(50),
    )
    .option('--all', `every ${noun.replace(/s$/, '')}, page after page`)
    .option('--cursor <cursor>', 'continue from a previous listing');

/** `--input TEXT`: the first stage's input for this run (a string is used as it is). */
const inputOption = () =>
  new Option('--input <text>', "replaces the first stage's input for the pipelines this creates");

export function schedulesCommand(env: Environment): Command {
  const schedules = new Command('schedules')
    .alias('schedule')
    .description('apply, read, pause, resume, archive and trigger schedules');

  listOptions(
    schedules
      .command('list')
      .description('list schedules with their health')
      .addOption(new Option('--status <status>', 'only this status').choices(STATUSES)),
    'schedules',
  ).action(
    async (
      opts: { status?: ScheduleStatus; limit: number; all?: boolean; cursor?: string },
      cmd: Command,
    ) => {
      const ctx = contextFor(cmd, env);
      const page = await readPages(
        (p) =>
          ctx.client.schedules.listPage({ ...p, ...(opts.status ? { status: opts.status } : {}) }),
        opts,
      );
      printPage(ctx, page, 'schedules', scheduleTable);
    },
  );

  schedules
    .command('get')
    .description('show a schedule: plan, next run, health, definition')
    .argument('<name>', 'schedule name')
    .action(async (name: string, _opts: unknown, cmd: Command) => {
      const ctx = contextFor(cmd, env);
      ctx.print(await ctx.client.schedules.get(name), scheduleDetails);
    });

  schedules
    .command('apply')
    .description('create or update a schedule from a JSON or YAML file (PUT /schedules/{name})')
    .requiredOption(
      '-f, --file <path>',
      'the schedule: kind, cronExpression | intervalSeconds | runAt, policies, definition (`-` reads stdin)',
    )
    .option('--name <name>', "the schedule's name, when the file has none (or to override it)")
    .addHelpText(
      'after',
      `
Example schedule.yaml:
  name: nightly-report
  kind: Cron
  cronExpression: "0 2 * * *"
  timeZone: Europe/Paris
  definition:
    name: report
    stages:
      - stageName: build
        stageHandlerName: echo
        input: { day: yesterday }`,
    )
    .action(async (opts: { file: string; name?: string }, cmd: Command) => {
      const ctx = contextFor(cmd, env);
      const { name: fileName, ...rest } = await readObjectFile(opts.file);
      const name = opts.name ?? (typeof fileName === 'string' ? fileName : undefined);
      if (!name)
        throw new UsageError(`${opts.file} has no name: add \`name:\` to it or pass --name`);
      const definition = rest.definition;
      const body = (typeof definition === 'object' &&
      definition !== null &&
      !Array.isArray(definition)
        ? { ...rest, definition: stringifyStageInputs(definition as Record<string, unknown>) }
        : rest) as unknown as ScheduleUpsertRequest;
      const { schedule, created } = await ctx.client.schedules.upsert(name, body);
      ctx.print(
        schedule,
        (s) =>
          `schedule ${s.name} ${created ? 'created' : 'applied'} (${s.status}, definition v${s.definitionVersion}, next run ${time(s.nextRunAt) ?? 'none'})`,
      );
    });

  for (const [verb, description] of [
    ['pause', 'stop creating pipelines; definition and history are kept'],
    ['resume', 'plan from now again (no backlog of missed ticks)'],
    ['archive', 'retire a schedule (a later apply brings it back)'],
  ] as const) {
    schedules
      .command(verb)
      .description(description)
      .argument('<name>', 'schedule name')
      .action(async (name: string, _opts: unknown, cmd: Command) => {
        const ctx = contextFor(cmd, env);
        const schedule = await ctx.client.schedules[verb](name);
        ctx.print(
          schedule,
          (s) => `schedule ${s.name} ${s.status} (next run ${time(s.nextRunAt) ?? 'none'})`,
        );
      });
  }

  schedules
    .command('trigger')
    .description('run a schedule now (a Manual run; its plan is untouched)')
    .argument('<name>', 'schedule name')
    .addOption(inputOption())
    .action(async (name: string, opts: { input?: string }, cmd: Command) => {
      const ctx = contextFor(cmd, env);
      const result = await ctx.client.schedules.trigger(
        name,
        opts.input === undefined ? {} : { input: opts.input },
      );
      ctx.print(
        result,
        (r) =>
          `run ${r.run.id} (${r.run.trigger}, ${r.run.status}) created pipeline ${r.pipeline.id} (${r.pipeline.status})`,
      );
    });

  listOptions(
    schedules
      .command('runs')
      .description("list a schedule's runs, newest first")
      .argument('<name>', 'schedule name'),
    'runs',
  ).action(
    async (name: string, opts: { limit: number; all?: boolean; cursor?: string }, cmd: Command) => {
      const ctx = contextFor(cmd, env);
      const page = await readPages((p) => ctx.client.schedules.runsPage(name, p), opts);
      printPage(ctx, page, 'runs', runTable);
    },
  );

  schedules
    .command('backfill')
    .description(
      'create runs for the ticks of a range [from, to); a tick already backfilled is not run twice',
    )
    .argument('<name>', 'schedule name')
    .requiredOption(
      '--from <when>',
      'first instant, inclusive: a date-time or a duration back from now (7d)',
    )
    .requiredOption(
      '--to <when>',
      'end, exclusive: a date-time or a duration back from now (0s = now)',
    )
    .addOption(
      new Option('--overlap-policy <policy>', "instead of the schedule's").choices([
        'Skip',
        'Queue',
        'Replace',
        'Allow',
      ]),
    )
    .addOption(inputOption())
    .action(
      async (
        name: string,
        opts: { from: string; to: string; overlapPolicy?: string; input?: string },
        cmd: Command,
      ) => {
        const ctx = contextFor(cmd, env);
        const request = {
          from: parseMoment(opts.from, ctx.now()),
          to: parseMoment(opts.to, ctx.now()),
          ...(opts.overlapPolicy ? { overlapPolicy: opts.overlapPolicy } : {}),
          ...(opts.input !== undefined ? { input: opts.input } : {}),
        } as ScheduleBackfillRequest;
        const result = await ctx.client.schedules.backfill(name, request);
        ctx.print(
          result,
          (r) =>
            `${r.ticks} ticks, ${r.created} pipelines created${r.runs.length ? `\n\n${runTable(r.runs)}` : ''}`,
        );
      },
    );

  return schedules;
}
