// po handlers list | show | pause | resume | limit
import type { HandlerSettingsRequest, HandlerView } from '@po/client';
import { Command, Option } from 'commander';
import { contextFor, type Environment } from '../context.js';
import { UsageError } from '../errors.js';
import { countOrNone, noneAsNull, rateOrNone } from '../input.js';
import { handlerDetails, handlerTable } from '../render.js';

const limitsOf = (h: HandlerView) =>
  `max concurrent ${h.maxConcurrent ?? 'none'}, max per second ${h.maxPerSecond ?? 'none'}`;

export function handlersCommand(env: Environment): Command {
  const handlers = new Command('handlers')
    .alias('handler')
    .description("pause, resume and limit the application's handlers; see what waits for them");

  handlers
    .command('list')
    .description('list handlers: paused, running, backlog, oldest wait, limits')
    .action(async (_opts: unknown, cmd: Command) => {
      const ctx = contextFor(cmd, env);
      const items = await ctx.client.handlers.list();
      if (ctx.output === 'json') ctx.io.out(JSON.stringify({ items }, null, 2));
      else if (items.length === 0) ctx.io.err('no handlers');
      else ctx.io.out(handlerTable(items));
    });

  handlers
    .command('show')
    .alias('get')
    .description('show a handler: settings, running, backlog, oldest wait')
    .argument('<name>', 'handler name (stageHandlerName)')
    .action(async (name: string, _opts: unknown, cmd: Command) => {
      const ctx = contextFor(cmd, env);
      ctx.print(await ctx.client.handlers.get(name), handlerDetails);
    });

  for (const [verb, description] of [
    ['pause', 'dispatch nothing more to the handler (running stages finish; the others wait)'],
    ['resume', 'dispatch to the handler again; waiting stages go at once'],
  ] as const) {
    handlers
      .command(verb)
      .description(description)
      .argument('<name>', 'handler name (stageHandlerName)')
      .action(async (name: string, _opts: unknown, cmd: Command) => {
        const ctx = contextFor(cmd, env);
        const handler = await ctx.client.handlers[verb](name);
        ctx.print(
          handler,
          (h) => `handler ${h.name} ${h.paused ? 'paused' : 'resumed'} (backlog ${h.backlog})`,
        );
      });
  }

  handlers
    .command('limit')
    .description(
      'set or clear the limits of a handler (`none` clears one; an option left out keeps its value)',
    )
    .argument('<name>', 'handler name (stageHandlerName)')
    .addOption(
      new Option('--max-concurrent <n|none>', 'most Pending + Running stages at once').argParser(
        countOrNone,
      ),
    )
    .addOption(
      new Option(
        '--max-per-second <rate|none>',
        'most dispatches per second (e.g. 5 or 0.5)',
      ).argParser(rateOrNone),
    )
    .action(
      async (
        name: string,
        opts: { maxConcurrent?: number | 'none'; maxPerSecond?: number | 'none' },
        cmd: Command,
      ) => {
        if (opts.maxConcurrent === undefined && opts.maxPerSecond === undefined)
          throw new UsageError(
            'give --max-concurrent, --max-per-second or both (`none` clears a limit)',
          );
        const ctx = contextFor(cmd, env);
        const settings: HandlerSettingsRequest = {
          ...(opts.maxConcurrent === undefined
            ? {}
            : { maxConcurrent: noneAsNull(opts.maxConcurrent) }),
          ...(opts.maxPerSecond === undefined
            ? {}
            : { maxPerSecond: noneAsNull(opts.maxPerSecond) }),
        };
        const handler = await ctx.client.handlers.update(name, settings);
        ctx.print(handler, (h) => `handler ${h.name}: ${limitsOf(h)}`);
      },
    );

  return handlers;
}
